"""The client half: the Python client of the protocol and the terminal front ends
(chat, one-shot `run`, `sessions`, rendering, the offline demo). Nothing here imports
the server half; the client starts the server as a subprocess.
"""

from .connection import CodyClient, CodyConnectionError, CodyError, PermissionHandler, RunStream

__all__ = ["CodyClient", "CodyConnectionError", "CodyError", "PermissionHandler", "RunStream"]
