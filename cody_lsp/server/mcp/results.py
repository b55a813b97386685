"""A ``tools/call`` result as the text the model reads.

Works on the result's JSON (``CallToolResult.model_dump(mode="json", by_alias=True)``), so it
does not depend on the SDK's classes. Text blocks are given as they are; an image or audio
block is described (its type and size: the bytes never reach the model); an embedded text
resource is given with its URI, a binary one described; a resource link is named;
``structuredContent`` is given as JSON when no text block says it already. ``isError`` makes
the result a failed tool call. The size limit and redaction are the caller's (hub.py).
"""

from __future__ import annotations

import json
from typing import Any


def _size(base64_text: Any) -> str:
    n = len(base64_text) * 3 // 4 if isinstance(base64_text, str) else 0
    return f"{n:,} bytes" if n < 10_000 else f"{n / 1024:,.0f} KiB"


def _block(block: Any) -> str:
    if not isinstance(block, dict):
        return f"[a content block that is not an object: {type(block).__name__}]"
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        mime = block.get("mimeType") or "unknown type"
        return f"[{kind}: {mime}, {_size(block.get('data'))}; the {kind} itself is not shown]"
    if kind == "resource":
        found = block.get("resource")
        resource: dict[str, Any] = found if isinstance(found, dict) else {}
        uri = resource.get("uri", "?")
        mime = resource.get("mimeType")
        label = f"{uri} ({mime})" if mime else str(uri)
        if "text" in resource:
            return f"[resource {label}]\n{resource['text']}"
        return f"[resource {label}: binary, {_size(resource.get('blob'))}; not shown]"
    if kind == "resource_link":
        parts = [str(block.get("name") or ""), str(block.get("uri") or "")]
        if block.get("mimeType"):
            parts.append(f"({block['mimeType']})")
        text = f"[resource link: {' '.join(p for p in parts if p)}]"
        if block.get("description"):
            text += f" {block['description']}"
        return text
    return f"[a content block of type {kind!r}, which cody-lsp does not show]"


def result_text(result: dict[str, Any]) -> tuple[bool, str]:
    """(ok, text) of a ``tools/call`` result's JSON."""
    content = result.get("content")
    blocks = content if isinstance(content, list) else []
    parts = [_block(b) for b in blocks]
    structured = result.get("structuredContent")
    if structured is not None and not any(isinstance(b, dict) and b.get("type") == "text" for b in blocks):
        parts.append(json.dumps(structured, ensure_ascii=False, indent=1))
    text = "\n".join(parts) if parts else "(the tool returned no content)"
    return result.get("isError") is not True, text
