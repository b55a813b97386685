"""cody/languageFeature: the editor answers the code_nav tool's questions with its own language features.

Asked only of a client that declared `languageFeatures: true` (the core's editor source,
core/code_nav.py, asks and bounds the wait). The document is named by the URI the editor knows it by
(the one it opened it with, or its folder's spelling); `workspace_symbols` sends the folder's URI.
Positions are in the position encoding agreed at `initialize`. The answer is the LSP result, passed
on as it is (tools/code_nav.py reads it defensively: the client's bytes are untrusted); an error
answer is the tool's error, naming the editor, and the next source is tried.
"""

from __future__ import annotations

import logging
from typing import Any

from ...jsonrpc.endpoint import RpcError
from ...protocol.wire import LanguageFeatureParams, Position, to_wire
from ..tools.code_nav import NavFailed
from ..tools.editor_view import editor_uri
from .client_requests import Asks, ask_client

log = logging.getLogger(__name__)

LANGUAGE_FEATURE = "cody/languageFeature"


async def ask_language_feature(
    server: Asks, editor: Any, operation: str, path: str, position: Position | None, query: str | None
) -> Any:
    """`editor`: the LSP face's live editor state (editor_state.Editor): how it names the file."""
    uri = editor.documents.uri_of(path) or editor_uri(path, editor.folder_paths())
    params = LanguageFeatureParams(operation, uri, position, query)  # type: ignore[arg-type]
    try:
        return await ask_client(server, LANGUAGE_FEATURE, to_wire(params), prefix="nav")
    except RpcError as exc:
        log.info("cody/languageFeature was answered with an error (%s)", exc.code)
        raise NavFailed(f"the editor answered with an error ({exc.code}): {str(exc.message)[:300]}") from None
