"""Secrets: what a command may inherit, what a message may show, what the logs may say.

- :func:`scrub_env` builds a command's environment: the server's own ``CODY_*``
  settings and anything that looks like a key, token, secret or password are removed,
  unless named in ``CODY_PASS_ENV`` (comma-separated, never a ``CODY_*`` name).
- :func:`redact` replaces a secret *and its near-copies* in a text: any run of
  :data:`MIN_RUN` consecutive letters and digits of the secret, whatever separates
  them (spaces, quotes, dashes, line breaks) and in any case, also inside its base64
  or hex encoding. So a key with a changed prefix, split across lines or quotes, or
  cut short at either end is still masked. Only a value that can be a secret is
  (:func:`can_be_secret`): a local endpoint's placeholder key (``none``, ``EMPTY``,
  ``ollama``, ``sk-no-key-required``) is a word the model must read as it is.
- :func:`protect_process` keeps commands from reading the secrets back out of the
  server process (``/proc/<server>/environ``, ``/proc/<server>/mem``).
- :func:`cap_wire_loggers` keeps request bodies and SQL parameters out of the log.
"""

from __future__ import annotations

import bisect
import functools
import logging
import os
import re
from collections.abc import Iterable, Mapping

log = logging.getLogger(__name__)

MASK = "***"
MIN_SECRET = 8  # a shorter value is never a secret to mask: it would mask ordinary words
MIN_RUN = 12  # a run of this many letters/digits of a secret is a near-copy of it
MIN_ENV_SECRET = 12  # values of secret-looking variables this long are redacted from tool output
PASS_ENV = "CODY_PASS_ENV"
WIRE_LOGGERS = ("aiosqlite", "openai", "httpx", "httpcore", "aiohttp")

# A name segment (split at _ - .) that says "secret": exact words, or words ending in KEY.
_SECRET_WORDS = frozenset(
    {
        "TOKEN",
        "TOKENS",
        "SECRET",
        "SECRETS",
        "PASSWORD",
        "PASSWD",
        "PASS",
        "PWD",
        "PASSPHRASE",
        "CREDENTIAL",
        "CREDENTIALS",
        "CREDS",
        "AUTH",
        "COOKIE",
        "PAT",
        "KEY",
        "KEYS",
    }
)
_SECRET_PARTS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "APIKEY", "PRIVATEKEY", "ACCESSKEY")
_SECRET_PREFIXES = ("AWS_",)
_NOT_SECRET = frozenset({"PWD", "OLDPWD"})
_URL_WITH_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@")
_SECRET_VALUE = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----|(?i:\b(?:password|pwd|accountkey)=)")
_SEGMENTS = re.compile(r"[_.\-]+")


def secret_name(name: str) -> bool:
    """True if an environment variable's name says it holds a secret (``*_API_KEY``, ``GITHUB_TOKEN``…)."""
    upper = name.upper()
    if upper in _NOT_SECRET:
        return False
    if upper.startswith(_SECRET_PREFIXES) or any(part in upper for part in _SECRET_PARTS):
        return True
    return any(seg in _SECRET_WORDS or seg.endswith("KEY") for seg in _SEGMENTS.split(upper))


def passed_through(environ: Mapping[str, str]) -> frozenset[str]:
    """The names in ``CODY_PASS_ENV`` (commas or spaces between them); ``CODY_*`` names never pass."""
    names = re.split(r"[,\s]+", environ.get(PASS_ENV, ""))
    return frozenset(n for n in names if n and not n.upper().startswith("CODY_"))


def scrub_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment a command gets: ``environ`` minus ``CODY_*`` and anything secret-looking.

    Secret-looking: the name (:func:`secret_name`), or a value that holds a URL with a
    password, a private key, or a copy of a removed secret (the API key under another
    name). Names listed in ``CODY_PASS_ENV`` are kept as they are.
    """
    keep = passed_through(environ)
    copies = env_secrets(environ)
    env = {}
    for name, value in environ.items():
        if name in keep:
            env[name] = value
        elif name.upper().startswith("CODY_") or secret_name(name):
            continue
        elif _URL_WITH_PASSWORD.search(value) or _SECRET_VALUE.search(value) or any(c in value for c in copies):
            continue
        else:
            env[name] = value
    return env


def env_secrets(environ: Mapping[str, str]) -> tuple[str, ...]:
    """Values that tool output must not show: the API key, and the values of the
    secret-looking variables that :func:`scrub_env` removes (long enough to be keys,
    not paths) — each only if it can be a secret (:func:`can_be_secret`)."""
    keep = passed_through(environ)
    found = {
        value
        for name, value in environ.items()
        if name not in keep and secret_name(name) and len(value) >= MIN_ENV_SECRET and not value.startswith(("/", "~"))
    }
    key = environ.get("CODY_MODEL_API_KEY")
    if key:
        found.add(key)
    return tuple(sorted(value for value in found if can_be_secret(value)))


_WORD_LETTERS = 16  # a run of letters this long or shorter, in one case, may be a word
_WORD_DIGITS = 4  # a run of digits this long or shorter may be a number in a text (a year, a port)


def can_be_secret(value: str) -> bool:
    """Whether masking `value` in a text protects a secret rather than corrupting the text: it
    has at least :data:`MIN_SECRET` characters and is not made of words only. Words: runs of
    ASCII letters of at most 16 in one case (or capitalized), runs of at most 4 digits, whatever
    stands between them. So ``none``, ``EMPTY``, ``ollama``, ``demo``, ``lm-studio``,
    ``sk-no-key-required`` or ``not-needed`` are not secrets; ``sk-proj-…``, ``gsk_…`` or a hex
    key are."""
    if len(value) < MIN_SECRET:
        return False
    runs = _ALNUM.findall(value)
    return bool(runs) and not all(_word_like(run) for run in runs)


def _word_like(run: str) -> bool:
    if run.isdigit():
        return len(run) <= _WORD_DIGITS
    return run.isalpha() and len(run) <= _WORD_LETTERS and (run.islower() or run.isupper() or run.istitle())


# ---------------------------------------------------------------- redaction

_ALNUM = re.compile(r"[A-Za-z0-9]+")
_NOT_ALNUM_BYTES = bytes(b for b in range(128) if not chr(b).isalnum())
_PIECES = re.compile(".{%d}" % (MIN_RUN // 2))
_STEP = MIN_RUN // 2  # every run of MIN_RUN characters holds a whole _STEP-gram at a multiple of _STEP


def _normalize(text: str) -> str:
    """The ASCII letters and digits of ``text``, lower-cased (fast: bytes.translate)."""
    return text.encode("ascii", "ignore").translate(None, _NOT_ALNUM_BYTES).lower().decode("ascii")


def _forms(secret: str) -> Iterable[str]:
    """The secret, its hex, and its base64 at each of the three byte alignments."""
    import base64

    yield secret
    raw = secret.encode("utf-8", "surrogatepass")
    yield raw.hex()
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + raw).decode().rstrip("=")
        # Drop the characters that mix in the bytes before or after the secret.
        yield encoded[(pad * 8 + 5) // 6 : -2]


@functools.lru_cache(maxsize=16)
def _grams(secrets: tuple[str, ...]) -> tuple[frozenset[str], frozenset[str]]:
    """(every MIN_RUN-gram, every _STEP-gram) of the normalized forms of the secrets."""
    runs: set[str] = set()
    steps: set[str] = set()
    for secret in secrets:
        for form in _forms(secret):
            norm = _normalize(form)
            runs.update(norm[i : i + MIN_RUN] for i in range(len(norm) - MIN_RUN + 1))
            if len(norm) >= MIN_RUN:
                steps.update(norm[i : i + _STEP] for i in range(len(norm) - _STEP + 1))
    return frozenset(runs), frozenset(steps)


def redact_all(text: str, secrets: Iterable[str | None]) -> str:
    """Replace each secret and its near-copies by ``***``; a value that cannot be a secret
    (:func:`can_be_secret`: a placeholder key, a word) leaves the text as it is."""
    wanted = tuple(sorted({s for s in secrets if s and can_be_secret(s)}, key=len, reverse=True))
    if not wanted or not text:
        return text
    for secret in wanted:
        text = text.replace(secret, MASK)
    runs, steps = _grams(wanted)
    if not runs:
        return text
    # The text's letters and digits, lower-cased; where each piece came from is worked out
    # only when something matched (the common case costs two passes at C speed).
    norm = _normalize(text)
    if steps.isdisjoint(_PIECES.findall(norm)):  # no _STEP-gram of a secret at any multiple of _STEP
        return text
    spans: list[tuple[int, int]] = []
    for anchor in range(0, len(norm) - _STEP + 1, _STEP):
        if norm[anchor : anchor + _STEP] not in steps:
            continue
        for start in range(max(0, anchor - _STEP), anchor + 1):
            if norm[start : start + MIN_RUN] in runs:
                spans.append((start, start + MIN_RUN))
    if not spans:
        return text
    norm_starts: list[int] = []
    text_starts: list[int] = []
    size = 0
    for match in _ALNUM.finditer(text):
        norm_starts.append(size)
        text_starts.append(match.start())
        size += match.end() - match.start()

    def original(index: int) -> int:
        piece = bisect.bisect_right(norm_starts, index) - 1
        return text_starts[piece] + index - norm_starts[piece]

    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out = []
    last = 0
    for start, end in merged:
        a, b = original(start), original(end - 1) + 1
        out.append(text[last:a])
        out.append(MASK)
        last = b
    out.append(text[last:])
    return "".join(out)


def redact(text: str, secret: str | None) -> str:
    """``text`` with ``secret`` and its near-copies replaced by ``***``."""
    return redact_all(text, (secret,))


# ---------------------------------------------------------------- the server process

_PR_SET_DUMPABLE = 4


def protect_process(environ: Mapping[str, str] = os.environ) -> None:
    """Keep a command from reading secrets out of the server process.

    - The values of :func:`env_secrets` in the process's initial environment block
      (what ``/proc/<pid>/environ`` shows, to the same user and to root) are
      overwritten with ``*``. ``os.environ`` keeps its own copy.
    - The process is made non-dumpable (``PR_SET_DUMPABLE`` 0), so a process of the
      same user cannot open its ``/proc`` memory files or ptrace it (root still can).
    Linux only; anything unavailable is skipped (logged at DEBUG).
    """
    import ctypes

    try:
        _wipe_initial_environ(env_secrets(environ))
    except (OSError, ValueError, IndexError) as exc:
        log.debug("could not wipe the initial environment: %s", exc)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            log.debug("prctl(PR_SET_DUMPABLE) failed: errno %d", ctypes.get_errno())
    except (OSError, AttributeError) as exc:
        log.debug("prctl is not available: %s", exc)


def _wipe_initial_environ(values: tuple[str, ...]) -> None:
    import ctypes

    if not values:
        return
    with open("/proc/self/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    # Fields 50 and 51 of stat (env_start, env_end); the split starts at field 3.
    start, end = int(fields[50 - 3]), int(fields[51 - 3])
    if not 0 < start < end or end - start > 1 << 24:
        return
    block = ctypes.string_at(start, end - start)
    offset = 0
    for entry in block.split(b"\0"):
        name, eq, value = entry.partition(b"=")
        if eq and value and os.fsdecode(value) in values:
            at = start + offset + len(name) + 1
            ctypes.memset(at, ord("*"), len(value))
        offset += len(entry) + 1


def cap_wire_loggers(environ: Mapping[str, str] = os.environ) -> None:
    """At DEBUG, aiosqlite logs SQL parameters and openai/httpx log request bodies (prompts,
    file contents): hold those loggers at INFO unless ``CODY_LOG_WIRE=1``."""
    if environ.get("CODY_LOG_WIRE", "").strip() in ("1", "true", "yes"):
        return
    for name in WIRE_LOGGERS:
        logger = logging.getLogger(name)
        logger.setLevel(max(logging.INFO, logger.getEffectiveLevel()))
