"""Patterns from the model, matched in linear time: grep regexes and glob patterns.

Both compile to RE2 (``google-re2``), whose matching time is linear in the
text whatever the pattern: a pattern such as ``(a+)+$`` cannot backtrack
catastrophically. RE2's syntax is Python's minus backreferences, lookaround,
atomic groups, possessive quantifiers and ``\\Z`` (write ``\\z``); such a
pattern is refused with a tool error that says which feature to rewrite.
``\\d``, ``\\w``, ``\\s`` and ``\\b`` are ASCII-only in RE2.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import re2  # type: ignore[import-untyped]

from .workspace import ToolError

__all__ = ["MAX_PATTERN_CHARS", "grep_regex", "glob_matcher"]

MAX_PATTERN_CHARS = 1000

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # errors become tool errors; RE2 would also print them to stderr

# Python syntax RE2 lacks, recognised to say what to rewrite (run by `re` on a pattern of ≤ 1000 characters).
_UNSUPPORTED = (
    (re.compile(r"\(\?<?[=!]"), "lookahead and lookbehind ((?=…), (?!…), (?<=…), (?<!…))"),
    (re.compile(r"\\[1-9]|\(\?P="), "backreferences (\\1, (?P=name))"),
    (re.compile(r"\(\?>|[*+?}]\+"), "atomic groups and possessive quantifiers"),
    (re.compile(r"\\Z"), "\\Z (write \\z for the end of the line)"),
)


def _check_length(kind: str, pattern: str) -> None:
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ToolError(f"{kind} is {len(pattern):,} characters long; the limit is {MAX_PATTERN_CHARS:,}")


def grep_regex(pattern: str) -> Callable[[bytes], object]:
    """A search function over one line of UTF-8 bytes (truthy when the line matches)."""
    _check_length("the grep pattern", pattern)
    try:
        return re2.compile(pattern, _OPTIONS).search
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
    try:
        re.compile(pattern)  # Python's parser tells a plain syntax error from syntax RE2 lacks
    except (re.error, OverflowError, RecursionError) as exc:
        raise ToolError(f"invalid regex {pattern!r}: {exc}") from None
    features = [name for probe, name in _UNSUPPORTED if probe.search(pattern)]
    lacking = "; ".join(features) if features else "part of this pattern"
    raise ToolError(
        f"grep uses RE2 regular expressions (linear time, no backtracking), which do not support {lacking} "
        f"(RE2 says: {reason}); rewrite the pattern without it, e.g. search for a wider pattern and read the hits"
    )


def _literal(ch: str) -> str:
    if ch.isascii() and not ch.isalnum():
        return f"\\x{{{ord(ch):02x}}}" if not ch.isprintable() else "\\" + ch
    return ch


def _char_class(body: str) -> str:
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    out = []
    for i, ch in enumerate(body):
        if ch == "-" and 0 < i < len(body) - 1:
            out.append("-")  # a range
        else:
            out.append(_literal(ch))
    return ("[^/" if negate else "[") + "".join(out) + "]"


def glob_translate(pattern: str) -> str:
    """The RE2 syntax of a glob over '/'-separated paths: ``*``, ``?``, ``[..]``/``[!..]``, ``**``."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif ch == "*":
            out.append("[^/]*")
            i += 1
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[" and (j := pattern.find("]", i + 2)) != -1:
            out.append(_char_class(pattern[i + 1 : j]))
            i = j + 1
        else:
            out.append(_literal(ch))
            i += 1
    return "(?s)" + "".join(out)


def glob_matcher(pattern: str) -> Callable[[str], object]:
    """A function telling whether a whole shown path matches the glob (truthy when it does)."""
    _check_length("the glob pattern", pattern)
    try:
        return re2.compile(glob_translate(pattern), _OPTIONS).fullmatch
    except re2.error:
        raise ToolError(
            f"invalid glob pattern {pattern!r} (check its [...] classes and ranges); example: '**/*.py'"
        ) from None
