"""Unit tests for cody_lsp.secrets: scrubbed environments, redaction of near-copies."""

from __future__ import annotations

import base64
import logging
import subprocess
import sys
import textwrap

import pytest

from cody_lsp.secrets import (
    MASK,
    WIRE_LOGGERS,
    can_be_secret,
    cap_wire_loggers,
    env_secrets,
    redact,
    redact_all,
    scrub_env,
    secret_name,
)

KEY = "sk-live-9f8A7b6C5d4E3f2G1h0IjKlMnOp"


# ------------------------------------------------------------------ environment


@pytest.mark.parametrize(
    "name",
    [
        "CODY_MODEL_API_KEY",
        "OPENAI_API_KEY",
        "FOO_TOKEN",
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "NPM_TOKEN",
        "HF_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
        "AWS_SESSION_TOKEN",
        "AWS_REGION",
        "AZURE_CLIENT_SECRET",
        "DB_PASSWORD",
        "MYSQL_PWD",
        "PGPASSWORD",
        "DB_PASS",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "STRIPE_KEY",
        "SSH_PRIVATE_KEY",
        "GITHUB_PAT",
        "NPM_CONFIG__AUTH",
        "SSH_AUTH_SOCK",
        "my_secret",
        "session.cookie",
    ],
)
def test_secret_looking_names(name):
    assert secret_name(name)


@pytest.mark.parametrize("name", ["PATH", "HOME", "PWD", "OLDPWD", "LANG", "TERM", "KEYBOARD_LAYOUT", "PASSAGE"])
def test_ordinary_names(name):
    assert not secret_name(name)


def test_scrub_env_removes_cody_and_secrets_and_passes_named_ones():
    env = {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "PWD": "/w",
        "CODY_MODEL_API_KEY": KEY,
        "CODY_DB": "/tmp/db",
        "CODY_PASS_ENV": "NPM_TOKEN, MY_DSN CODY_MODEL_API_KEY",
        "FOO_TOKEN": "t" * 20,
        "NPM_TOKEN": "npm-passed-through",
        "DATABASE_URL": "postgres://user:hunter2@db/app",
        "MY_DSN": "postgres://user:hunter2@db/app",
        "PLAIN_URL": "https://example.com/x",
        "COPY_OF_KEY": f"Bearer {KEY}",
        "PEM": "-----BEGIN RSA PRIVATE KEY-----\nabc",
    }
    out = scrub_env(env)
    assert out == {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "PWD": "/w",
        "NPM_TOKEN": "npm-passed-through",
        "MY_DSN": "postgres://user:hunter2@db/app",
        "PLAIN_URL": "https://example.com/x",
    }
    assert env["CODY_MODEL_API_KEY"] == KEY  # the input is not changed


def test_env_secrets_are_long_secret_values_not_paths_or_passed_ones():
    env = {
        "CODY_MODEL_API_KEY": "9f8A7b6C",
        "GITHUB_TOKEN": "ghp_" + "x" * 36,
        "TOKENIZERS_PARALLELISM": "false",
        "GOOGLE_APPLICATION_CREDENTIALS": "/home/u/.config/gcloud/creds.json",
        "NPM_TOKEN": "npm-passed-through-token",
        "CODY_PASS_ENV": "NPM_TOKEN",
        "HOME": "/home/user/somewhere",
    }
    assert env_secrets(env) == ("9f8A7b6C", "ghp_" + "x" * 36)
    # A placeholder key, or a secret-named variable holding words, is nothing to hide.
    placeholders = {"CODY_MODEL_API_KEY": "ollama", "SESSION_TOKEN": "not-needed-here-at-all"}
    assert env_secrets(placeholders) == ()


# ------------------------------------------------------------------ redaction


def test_exact_and_unchanged():
    assert redact(f"key={KEY}.", KEY) == f"key={MASK}."
    text = "an ordinary message about sk-live keys, 9f8A7b and tokens"
    assert redact(text, KEY) == text
    assert redact(text, None) == text and redact("", KEY) == ""


def test_short_secrets_only_exactly_and_tiny_ones_never():
    assert redact("x9f8A7b6Cx 9f8A7b-6C", "9f8A7b6C") == f"x{MASK}x 9f8A7b-6C"
    assert redact("abc", "abc") == "abc"


PLACEHOLDERS = [
    "none",
    "EMPTY",
    "ollama",
    "demo",
    "lm-studio",
    "sk-no-key-required",
    "not-needed",
    "sk-1234",
    "Changeme",
]


@pytest.mark.parametrize("key", PLACEHOLDERS)
def test_a_key_that_cannot_be_a_secret_never_changes_a_text(key: str):
    text = f"Try the cody {key} command; {key.upper()} {key.lower()} {key}s {' '.join(key)} {key.encode().hex()}"
    assert not can_be_secret(key)
    assert redact(text, key) == text and redact_all(text, [key, KEY]) == text


@pytest.mark.parametrize(
    "key", [KEY, "9f8A7b6C", "3f9a1c0be2d84a7f9c51", "ghp_" + "x" * 36, "gsk_aB3dE5fG7hI9jK1lM3nO5pQ7", "token-abc123"]
)
def test_keys_that_can_be_secrets(key: str):
    assert can_be_secret(key) and MASK in redact(f"a {key} b", key)


@pytest.mark.parametrize(
    "leak, expected",
    [
        ("xx" + KEY[2:], "xx-" + MASK),  # changed prefix
        (KEY[:-3] + "zzz", MASK + "zzz"),  # changed suffix
        (KEY[4:-4], MASK),  # a few characters less at both ends
        (KEY.upper(), MASK),  # case changed
        (KEY[:12] + " \n  " + KEY[12:], MASK),  # split by whitespace
        (f'"{KEY[:9]}" + "{KEY[9:]}"', f'"{MASK}"'),  # split by quotes
        (" ".join(KEY), MASK),  # one character at a time
    ],
)
def test_near_copies(leak, expected):
    assert redact(f"before {leak} after", KEY) == f"before {expected} after"


@pytest.mark.parametrize("prefix", [b"", b"a", b"ab", b"Authorization: Basic "])
def test_base64_of_the_key_at_any_alignment(prefix):
    encoded = base64.b64encode(prefix + KEY.encode() + b"\n").decode()
    out = redact(f"header {encoded} end", KEY)
    assert MASK in out
    assert len(out) < len(encoded)  # all but a few characters at the ends are gone


def test_hex_of_the_key():
    assert redact(f"dump: {KEY.encode().hex()}", KEY) == f"dump: {MASK}"


def test_fragments_shorter_than_the_run_length_stay():
    text = f"{KEY[:8]} and {KEY[20:30]}"
    assert redact(text, KEY) == text


def test_several_secrets_and_long_text():
    other = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    text = ("filler text. " * 5000) + KEY + " middle " + other[3:] + (" more" * 5000)
    out = redact_all(text, [KEY, other, None, ""])
    assert KEY not in out and other[3:] not in out and out.count(MASK) == 2
    assert out.startswith("filler text. ") and out.endswith(" more")


# ------------------------------------------------------------------ the process, the logs


def test_protect_process_wipes_proc_environ_and_keeps_os_environ():
    script = textwrap.dedent(
        """
        import ctypes, os
        from cody_lsp.secrets import protect_process
        protect_process()
        with open("/proc/self/environ", "rb") as f:
            block = f.read()
        dumpable = ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE
        print(repr(block.count(b"sk-proc-test-key-0123456789")), os.environ["CODY_MODEL_API_KEY"], dumpable)
        print(b"CODY_MODEL_API_KEY=" + b"*" * 27 in block, b"OTHER_VAR=visible" in block)
        """
    )
    env = {"CODY_MODEL_API_KEY": "sk-proc-test-key-0123456789", "OTHER_VAR": "visible", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["0 sk-proc-test-key-0123456789 0", "True True"]


@pytest.fixture
def logger_levels():
    saved = {name: logging.getLogger(name).level for name in (*WIRE_LOGGERS, "")}
    yield
    for name, level in saved.items():
        logging.getLogger(name).setLevel(level)


def test_wire_loggers_capped_at_info_unless_asked(logger_levels):
    logging.getLogger().setLevel(logging.DEBUG)
    for name in WIRE_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET)
    cap_wire_loggers({"CODY_LOG_WIRE": "1"})
    assert all(logging.getLogger(n).isEnabledFor(logging.DEBUG) for n in WIRE_LOGGERS)
    cap_wire_loggers({})
    for name in WIRE_LOGGERS:
        assert logging.getLogger(name).isEnabledFor(logging.INFO)
        assert not logging.getLogger(name).isEnabledFor(logging.DEBUG)
    logging.getLogger().setLevel(logging.WARNING)
    for name in WIRE_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET)
    cap_wire_loggers({})
    assert not logging.getLogger("httpx").isEnabledFor(logging.INFO)  # never louder than asked
