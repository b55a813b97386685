"""Workspace folders: one spelling for each folder.

A folder may arrive as a `file://` URI or an absolute path, with a trailing
slash or through a symlink; all of these are the same folder once normalized.
"""

from __future__ import annotations

import os
from urllib.parse import unquote, urlparse

from ...protocol.errors import InvalidParams


def normalize_folder(raw: str, *, must_exist: bool = True, field: str = "workspaceFolder") -> str:
    """Absolute real path without a trailing slash; raise InvalidParams (naming `field`) if unusable."""
    if raw.startswith("file:"):
        parsed = urlparse(raw)
        if parsed.netloc not in ("", "localhost"):
            raise InvalidParams(f"'{field}' {raw!r} is a remote file URI; only local folders are supported")
        path = unquote(parsed.path)
    elif "://" in raw:
        raise InvalidParams(f"'{field}' must be a file:// URI or an absolute path, got {raw!r}")
    else:
        path = os.path.expanduser(raw)
    if "\x00" in path:
        raise InvalidParams(f"'{field}' must not contain NUL characters")
    if not os.path.isabs(path):
        raise InvalidParams(f"'{field}' must be an absolute path or a file:// URI, got {raw!r}")
    real = os.path.realpath(path)
    if len(real) > 1:
        real = real.rstrip("/") or "/"
    if must_exist and not os.path.isdir(real):
        raise InvalidParams(f"'{field}' {raw!r} is not an existing folder")
    return real
