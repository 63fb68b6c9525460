"""The verifiers Environments Hub service (FastAPI app factory: ``hub_server.app.create_app``; CLI: ``vf-hub``).

See docs/hub.md. Nothing is built at import time.
"""
