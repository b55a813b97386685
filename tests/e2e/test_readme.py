"""The README's commands work as written, in order, after the README's install.

Every command of the README's ```sh blocks is either run here, as written and in order,
or belongs to one of the few kinds below, each said where it runs:

- the install and the whole test suite: `.ci/run` runs these very lines on a fresh machine,
  in a fresh clone (the test below checks that .ci/run holds them verbatim); this test runs
  inside that suite, in the `.venv` that install made;
- the real model's settings: replaced by a scripted provider's, the commands after them
  run as written against it;
- building the extension needs the npm registry: `editor_client/ci.sh`, run by .ci/run,
  does `npm ci` and builds the `.vsix` with `npm run package`.

The commands run in a scratch folder whose `.venv` is the environment running this test,
with HOME, the state folder and TMPDIR inside it: nothing outside is touched.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from cody_lsp.testing.provider import Reply, ScriptedProvider

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

# Commands not run here as written: (pattern, where they run instead).
ELSEWHERE = [
    (r'python3 -m venv \.venv && \.venv/bin/pip install -e "\.\[dev\]"', "ci"),
    (r"\.venv/bin/python -m pytest -q\b.*", "ci"),
    (r"bash \.ci/run\b.*", "ci itself"),
    (r"export CODY_MODEL=.*", "model settings"),
    (r"cd editor_client && npm ci && npm run package\b.*", "npm (editor_client/ci.sh builds the .vsix)"),
    (r"npx @vscode/vsce package\b.*", "npm"),
]
SCRIPTED_SETTINGS = "export CODY_MODEL=scripted-model CODY_MODEL_BASE_URL={url} CODY_MODEL_API_KEY=test-key"


@dataclass
class Block:
    lang: str
    text: str
    before: str  # the last non-empty line before the block


def readme_blocks() -> list[Block]:
    blocks, lines = [], README.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        match = re.fullmatch(r"```(\w*)", lines[i].strip())
        if not match:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        before = next((line for line in reversed(lines[:i]) if line.strip()), "")
        blocks.append(Block(match.group(1), "\n".join(lines[i + 1 : end]) + "\n", before.strip()))
        i = end + 1
    return blocks


def commands(block: Block) -> list[str]:
    """The block's commands: backslash continuations joined; blank and comment lines left out."""
    out: list[str] = []
    pending = ""
    for line in block.text.splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        line, pending = pending + line, ""
        if line.strip() and not line.strip().startswith("#"):
            out.append(line.strip())
    return out


def elsewhere(command: str) -> str | None:
    bare = re.sub(r"\s+#.*$", "", command).strip()
    return next((where for pattern, where in ELSEWHERE if re.fullmatch(pattern, bare)), None)


def shell_blocks() -> list[Block]:
    return [b for b in readme_blocks() if b.lang == "sh"]


def test_the_readme_install_and_tests_are_what_ci_runs():
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    for block in shell_blocks():
        for command in commands(block):
            if elsewhere(command) == "ci":
                bare = re.sub(r"\s+#.*$", "", command).strip()
                assert bare in ci, f".ci/run does not run the README's `{bare}` as written"


def test_the_readme_has_the_commands_this_test_expects():
    """The README's tour: install, demo, tests, a real model, the scripted provider."""
    every = [c for b in shell_blocks() for c in commands(b)]
    kinds = [elsewhere(c) for c in every]
    assert kinds.count("ci") == 2 and "model settings" in kinds
    assert any(c.startswith(".venv/bin/cody-lsp demo") for c in every)
    assert any(c.startswith(".venv/bin/python -m cody_lsp.testing.provider --script") for c in every)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _scratch(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    work = tmp_path / "clone"
    work.mkdir()
    (work / ".venv").symlink_to(Path(sys.prefix))
    home = tmp_path / "home"
    (home / "code" / "myproject").mkdir(parents=True)  # the README's example project
    (tmp_path / "tmp").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODY_", "VIRTUAL_ENV", "PYTHON"))}
    env.update(
        HOME=str(home),
        XDG_STATE_HOME=str(tmp_path / "state"),
        TMPDIR=str(tmp_path / "tmp"),
        TERM="dumb",
        NO_COLOR="1",
        CODY_RETRY_BASE_DELAY="0.05",
    )
    return work, env


async def _bash(script: str, cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        "bash",
        "-euo",
        "pipefail",
        "-c",
        script,
        cwd=str(cwd),
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(process.communicate(), 90)
    return process.returncode or 0, out.decode(errors="replace")


async def test_the_readme_commands_work_in_order(tmp_path: Path):
    work, env = _scratch(tmp_path)
    ran: list[str] = []
    async with ScriptedProvider([Reply(text="Added the /health endpoint.")]) as provider:
        for block in readme_blocks():
            if block.lang == "json":  # an example file, named by the line before it: "`NAME`:"
                name = re.search(r"`([~\w./-]+)`:$", block.before)
                assert name, f"a JSON example without a file name before it: {block.before!r}"
                (work / Path(name.group(1)).name).write_text(block.text)  # `~/.x/acp.json` too
                continue
            if block.lang != "sh":
                continue
            lines = []
            for command in commands(block):
                where = elsewhere(command)
                if where == "model settings":
                    lines.append(SCRIPTED_SETTINGS.format(url=provider.base_url))
                elif where is None:
                    lines.append(command)
            if not lines:
                continue
            script = "\n".join(lines).replace("--port 8765", f"--port {_free_port()}")
            script = script.replace("127.0.0.1:8765", "127.0.0.1:{port}")
            port = re.search(r"--port (\d+)", script)
            script = script.replace("{port}", port.group(1) if port else "")
            code, out = await _bash(script, work, env)
            assert code == 0, f"README commands failed (exit {code}):\n{script}\n--- output ---\n{out}"
            ran += lines
            if "cody-lsp demo" in script:
                assert "demo finished" in out
            if "cody-lsp run --yes" in script:
                assert '"output": "Added the /health endpoint."' in out
            if "cody_lsp.testing.provider" in script:
                assert "The folder holds replies.json" in out
    assert any("cody-lsp demo" in line for line in ran)
    assert any(line.startswith("cody-lsp sessions") for line in ran)
