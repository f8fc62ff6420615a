"""Real services for the cluster tests: a Dask scheduler and workers, and a PostgreSQL server.

Each runs as its own processes on 127.0.0.1, on ports free at the time, and is stopped (its whole
process group) when its context ends, whatever happened inside.
"""
from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

DASK = str(Path(sys.executable).parent / "dask")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _stop(process: subprocess.Popen, grace: float = 5) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(ProcessLookupError):  # and whatever it started (graders, kernels)
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(grace)


def tls_files(folder: Path) -> dict[str, Path]:
    """A throwaway certificate authority and one certificate it signed for 127.0.0.1, in PEM files:
    {"ca": ..., "cert": ..., "key": ...}. Scheduler, workers and the grader all present that one
    certificate (Dask checks that the peer's chain leads to the CA)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    valid = (now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=1))

    def certificate(subject, issuer, public_key, signing_key, *, ca: bool):
        builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
                   .serial_number(x509.random_serial_number()).not_valid_before(valid[0]).not_valid_after(valid[1])
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if not ca:
            loopback = x509.IPAddress(ipaddress.ip_address("127.0.0.1"))
            builder = (builder.add_extension(x509.SubjectAlternativeName([loopback]), critical=False)
                       .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                             ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
        return builder.sign(signing_key, hashes.SHA256())

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "perfcourse test CA")])
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    files = {"ca": folder / "ca.pem", "cert": folder / "cert.pem", "key": folder / "key.pem"}
    files["ca"].write_bytes(certificate(ca_name, ca_name, ca_key.public_key(), ca_key, ca=True)
                            .public_bytes(serialization.Encoding.PEM))
    files["cert"].write_bytes(certificate(name, ca_name, key.public_key(), ca_key, ca=False)
                              .public_bytes(serialization.Encoding.PEM))
    files["key"].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
    files["key"].chmod(0o600)
    return files


class DaskCluster:
    """`dask scheduler` and `dask worker` processes (one thread each, no nanny, so a killed worker
    stays dead); with `tls` (tls_files' paths), every connection is TLS with those certificates."""

    def __init__(self, logs: Path, tls: dict[str, Path] | None = None):
        self.logs, self.port, self.tls = logs, free_port(), tls
        self.address = f"{'tls' if tls else 'tcp'}://127.0.0.1:{self.port}"
        self.scheduler: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []

    def _tls_options(self) -> list[str]:
        if not self.tls:
            return []
        return ["--tls-ca-file", str(self.tls["ca"]), "--tls-cert", str(self.tls["cert"]),
                "--tls-key", str(self.tls["key"])]

    def _start(self, args: list[str], log: str) -> subprocess.Popen:
        with open(self.logs / log, "ab") as out:
            return subprocess.Popen([DASK, *args], stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)

    def start(self, workers: int) -> "DaskCluster":
        protocol = ["--protocol", "tls"] if self.tls else []
        self.scheduler = self._start(["scheduler", "--host", "127.0.0.1", "--port", str(self.port),
                                      "--no-dashboard", *protocol, *self._tls_options()], "scheduler.log")
        for index in range(workers):
            self.workers.append(self._start(
                ["worker", self.address, "--nthreads", "1", "--no-nanny", "--no-dashboard",
                 "--name", f"worker-{index}", "--death-timeout", "20", *self._tls_options()],
                f"worker-{index}.log"))
        self.wait_for_workers(workers)
        return self

    def client(self):
        from distributed import Client
        from distributed.security import Security

        security = Security(tls_ca_file=str(self.tls["ca"]), tls_client_cert=str(self.tls["cert"]),
                            tls_client_key=str(self.tls["key"]), require_encryption=True) if self.tls else None
        return Client(self.address, timeout=30, set_as_default=False, security=security)

    def wait_for_workers(self, count: int, timeout: float = 90) -> None:
        client = self.client()
        try:
            client.wait_for_workers(count, timeout=timeout)
        finally:
            client.close()

    def stop(self) -> None:
        for process in self.workers + ([self.scheduler] if self.scheduler else []):
            _stop(process)

    def log(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                         for p in sorted(self.logs.glob("*.log")))


@contextlib.contextmanager
def dask_cluster(logs: Path, workers: int = 2, tls: dict[str, Path] | None = None):
    cluster = DaskCluster(logs, tls)
    try:
        yield cluster.start(workers)
    finally:
        cluster.stop()


def postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


@contextlib.contextmanager
def postgresql():
    """A throwaway PostgreSQL server on a loopback port; yields its SQLAlchemy URL (database 'postgres').

    initdb refuses root, so as root the server runs as `nobody` in a folder that user owns."""
    bindir = postgres_bin()
    if bindir is None:
        raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
    base = Path(tempfile.mkdtemp(prefix="perfcourse-pg-"))
    base.chmod(0o755)
    data, port = base / "data", free_port()
    as_user: list[str] = []
    if os.geteuid() == 0:
        import pwd

        nobody = pwd.getpwnam("nobody")
        for folder in (base,):
            os.chown(folder, nobody.pw_uid, nobody.pw_gid)
        as_user = ["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups"]
    env = {"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8", "HOME": str(base)}
    run = lambda *args: subprocess.run(as_user + [str(bindir / args[0]), *args[1:]], cwd=base, env=env,  # noqa: E731
                                       capture_output=True, text=True, check=True)
    try:
        run("initdb", "-D", str(data), "-U", "grader", "--auth=trust", "-E", "UTF8", "--locale=C")
        run("pg_ctl", "-D", str(data), "-l", str(base / "server.log"), "-w", "-t", "60", "-o",
            f"-h 127.0.0.1 -p {port} -k {base}", "start")
        yield f"postgresql://grader@127.0.0.1:{port}/postgres"
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"{exc.cmd[len(as_user)]} failed: {exc.stderr or exc.stdout}") from None
    finally:
        subprocess.run(as_user + [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                       cwd=base, env=env, capture_output=True)
        shutil.rmtree(base, ignore_errors=True)
