# JupyterHub's configuration for the course on one shared server (`jupyterhub -f THIS_FILE`, as root).
#
# Who is who:
# - instructors (group `instructors`): their server opens on the course root, a copy of this
#   repository that they own, with Formgrader and nbgrader's Create Assignment tools; grading there
#   (Formgrader's Autograde, or `perfcourse grade` in a terminal) reads the course's
#   nbgrader_config.py, hence grader_config.py, whoever starts it;
# - students (group `students`): their server opens on their home folder with the Assignments
#   panel (Fetch, Submit, Fetch Feedback) and the notebook toolbar's Validate, nothing of grading.
# Everyone's server runs as their own Unix user (LocalProcessSpawner; the hub runs as root), in
# one Python environment that holds the course's pins, nbgrader's extensions and the `jax-cpu`
# kernel, so students' files are protected from each other by the file system itself.
#
# The exchange: nbgrader's exchange is a folder (Exchange.root) every user can write, mode 1777
# (world-writable, sticky), on this one machine. For several hosts, that folder must be the same
# on each: shared storage (NFS) mounted at the same path everywhere, with the same numeric user
# ids on every host (the exchange relies on Unix ownership), or an exchange service in its place
# (nbgrader's Exchange classes are pluggable: `c.ExchangeFactory.*`). Students' servers and the
# instructors' grading read the path from PERFCOURSE_EXCHANGE, which this file sets.
#
# Settings come from PERFCOURSE_HUB_* environment variables (deploy/jupyterhub/trial.py, which
# `make hub` runs, sets them all); a real deployment writes its values into the defaults below.
#
# AUTHENTICATION: the trial logs users in with JupyterHub's SharedPasswordAuthenticator, one
# password shared by every listed user. That is acceptable for a local trial on 127.0.0.1 ONLY:
# anyone with the password can log in as any listed user, the instructor included. For a real
# class use your institution's authenticator (OAuthenticator for GitHub/Google/CILogon, LDAP,
# or PAM with real passwords) and keep the rest of this file.
import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (provided by traitlets when JupyterHub loads this file)

HERE = Path(__file__).resolve().parent


def setting(name: str, default: str) -> str:
    return os.environ.get(f"PERFCOURSE_HUB_{name}", default)


def names(value: str) -> list[str]:
    return [name for name in (part.strip() for part in value.split(",")) if name]


COURSE = setting("COURSE", "/home/pc-instructor/course")   # the instructors' course root
COURSE_ID = setting("COURSE_ID", "jax-performance")        # grader_config.py's CourseDirectory.course_id
EXCHANGE = setting("EXCHANGE", "/srv/nbgrader/exchange")    # Exchange.root: 1777, shared by every user
ENV = setting("ENV", sys.prefix)                            # the Python environment every server runs in
STATE = setting("STATE", "/srv/perfcourse-hub")             # the hub's database and cookie secret (root only)
INSTRUCTORS = names(setting("INSTRUCTORS", "pc-instructor"))
STUDENTS = names(setting("STUDENTS", "pc-student1,pc-student2"))
IP = setting("IP", "127.0.0.1")
PORT = int(setting("PORT", "8000"))
HUB_PORT = int(setting("HUB_PORT", "8081"))
PROXY_API_PORT = int(setting("PROXY_API_PORT", "8001"))
PASSWORD = setting("TRIAL_PASSWORD", "")
PROXY = setting("PROXY", str(HERE / "node_modules" / ".bin" / "configurable-http-proxy"))

if not PASSWORD:
    raise SystemExit("jupyterhub_config.py: PERFCOURSE_HUB_TRIAL_PASSWORD is not set; this file's "
                     "shared-password login is for a local trial only (see its AUTHENTICATION note)")
if not Path(PROXY).is_file():
    raise SystemExit(f"jupyterhub_config.py: no configurable-http-proxy at {PROXY}: "
                     f"run `npm ci` in {HERE} (`make hub` does)")

# --- the hub and its proxy, on this machine's loopback only ------------------------------------
c.JupyterHub.bind_url = f"http://{IP}:{PORT}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = HUB_PORT
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{PROXY_API_PORT}"
c.ConfigurableHTTPProxy.command = [PROXY]
c.JupyterHub.db_url = f"sqlite:///{STATE}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = f"{STATE}/jupyterhub_cookie_secret"
c.JupyterHub.pid_file = f"{STATE}/jupyterhub.pid"
c.JupyterHub.cleanup_servers = True   # stopping the hub stops every server it started, and the proxy
c.JupyterHub.cleanup_proxy = True

# --- who may log in (see AUTHENTICATION above) -------------------------------------------------
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = PASSWORD
c.Authenticator.allowed_users = set(INSTRUCTORS) | set(STUDENTS)
c.JupyterHub.load_groups = {"instructors": {"users": INSTRUCTORS}, "students": {"users": STUDENTS}}

# --- everyone's server: their own Unix user, the course's environment ---------------------------
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [f"{ENV}/bin/jupyterhub-singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.ip = "127.0.0.1"
c.Spawner.http_timeout = 120
c.Spawner.start_timeout = 120
c.Spawner.environment = {
    # The environment's tools first: nbgrader starts alembic and kernels by name.
    "PATH": f"{ENV}/bin:/usr/local/bin:/usr/bin:/bin",
    "PERFCOURSE_EXCHANGE": EXCHANGE,
    "PERFCOURSE_COURSE_ID": COURSE_ID,
    "PERFCOURSE_COURSE": COURSE,
    "PYTHONNOUSERSITE": "1",
}
# A user's own Jupyter settings live in their home; the course's settings for their role come from
# JUPYTER_CONFIG_PATH (instructor/ or student/ beside this file, readable by everyone).
ROLE_CONFIG = {"instructor": HERE / "instructor", "student": HERE / "student"}


def configure_by_role(spawner) -> None:
    """Instructors open on the course with Formgrader; students on their home, without grading tools."""
    name = spawner.user.name
    role = "instructor" if name in INSTRUCTORS else "student"
    spawner.environment = dict(spawner.environment, JUPYTER_CONFIG_PATH=str(ROLE_CONFIG[role]))
    if role == "instructor":
        spawner.notebook_dir = COURSE


c.Spawner.pre_spawn_hook = configure_by_role

# A service token for automation (the trial's test drives the hub's API with it); none by default.
if setting("SERVICE_TOKEN", ""):
    c.JupyterHub.services = [{"name": "perfcourse-trial", "api_token": setting("SERVICE_TOKEN", "")}]
    c.JupyterHub.load_roles = [{
        "name": "perfcourse-trial",
        "scopes": ["admin:users", "admin:servers", "access:servers", "read:users", "list:users"],
        "services": ["perfcourse-trial"],
    }]
