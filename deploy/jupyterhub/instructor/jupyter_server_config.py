# An instructor's server: JupyterLab shows Formgrader in an iframe of the same server, which
# jupyterhub-singleuser's default policy (frame-ancestors 'none') forbids; allow this origin only.
c = get_config()  # noqa: F821
c.ServerApp.tornado_settings = {"headers": {"Content-Security-Policy": "frame-ancestors 'self'"}}
