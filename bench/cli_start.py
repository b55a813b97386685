"""The terminal commands' start-up, against the bare interpreter in the same run (issue 38).

Each figure is the median of N wall times of a fresh process, measured one after the other with
the bare starts they are compared with: `python -c pass` and `python -c "import openai"`.

- `cody-lsp --help`, `cody-lsp config`, `cody-lsp sessions` (goal ≤ 0.5 s each: none of them may
  load the server's or the model client's imports);
- `cody-lsp chat`: the process started → its prompt on the screen, in a pseudo-terminal (the
  terminal's cursor-position reports answered, as a terminal does); goal ≤ 1.0 s and ≤ 15× the
  bare start;
- `cody-lsp run "…"` against a model that answers at once (the scripted provider, in its own
  process): start → exit, goal ≤ 1.2 s and ≤ `import openai` + 0.6 s.

The database is the same for every start (made by the first, not counted), as a user's is.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PY, ROOT, Row, arg_parser, median, ms, report

HELP_GOAL = CONFIG_GOAL = SESSIONS_GOAL = 0.5
CHAT_GOAL, CHAT_RATIO = 1.0, 15.0
RUN_GOAL, RUN_OVER_OPENAI = 1.2, 0.6
PROMPT = "› ".encode()


def wall(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0,):
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.decode()[-500:]}")
    return elapsed


def chat_prompt(env: dict[str, str], cwd: Path) -> float:
    """Start `cody-lsp chat` in a pty; seconds until its prompt is on the screen (then Ctrl+D)."""
    import pty

    master, slave = pty.openpty()
    term_env = {**env, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30"}
    start = time.perf_counter()
    proc = subprocess.Popen(
        [PY, "-m", "cody_lsp", "chat"], env=term_env, cwd=cwd, stdin=slave, stdout=slave, stderr=slave, close_fds=True
    )
    os.close(slave)
    seen = b""
    shown = None
    deadline = start + 60
    try:
        while time.perf_counter() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if not ready:
                continue
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            if b"\x1b[6n" in data:  # a cursor-position report asked: answer as a terminal does
                os.write(master, b"\x1b[1;1R")
            seen += data
            if shown is None and b"/help for" in seen and PROMPT in seen.split(b"/help for", 1)[1]:
                shown = time.perf_counter() - start
                os.write(master, b"\x04")  # Ctrl+D: leave
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    if shown is None:
        raise SystemExit(f"cody-lsp chat showed no prompt: {seen.decode(errors='replace')[-800:]}")
    return shown


def provider_process(replies: int) -> tuple[subprocess.Popen[str], str]:
    script = Path(tempfile.mkstemp(suffix=".json")[1])
    script.write_text(json.dumps([{"text": "Done."}] * replies))
    proc = subprocess.Popen(
        [PY, "-m", "cody_lsp.testing.provider", "--script", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def main() -> None:
    args = arg_parser(__doc__.splitlines()[0]).parse_args()
    n = 2 if args.smoke else 7
    with tempfile.TemporaryDirectory(prefix="cody-bench-") as tmp:
        folder = Path(tmp) / "ws"
        folder.mkdir()
        provider, base_url = provider_process(3 * n + 2)
        env = {
            **os.environ,
            "CODY_MODEL": "bench-model",
            "CODY_MODEL_BASE_URL": base_url,
            "CODY_MODEL_API_KEY": "sk-bench",
            "CODY_DB": str(Path(tmp) / "state" / "sessions.db"),
            "XDG_STATE_HOME": str(Path(tmp) / "state"),
            "XDG_CONFIG_HOME": str(Path(tmp) / "config"),
            "CODY_APPROVALS": "never",
        }
        env.pop("CODY_BENCH_SERVER", None)
        cody = [PY, "-m", "cody_lsp"]
        try:
            wall([*cody, "run", "warm up"], env, folder)  # the database made, .pyc files written: not counted
            chat_prompt(env, folder)
            bare, bare_openai, helps, configs, sessions, chats, runs = [], [], [], [], [], [], []
            for _ in range(n):
                bare.append(wall([PY, "-c", "pass"], env, folder))
                bare_openai.append(wall([PY, "-c", "import openai"], env, folder))
                helps.append(wall([*cody, "--help"], env, folder))
                configs.append(wall([*cody, "config"], env, folder))
                sessions.append(wall([*cody, "sessions"], env, folder))
                chats.append(chat_prompt(env, folder))
                runs.append(wall([*cody, "run", "say done"], env, folder))
        finally:
            provider.kill()
            provider.wait()
    b, o = median(bare), median(bare_openai)

    def ratio(values: list[float]) -> str:
        return f"{median(values) / b:.1f}× `python -c pass`"

    rows = [
        Row("bare interpreter start (`python -c pass`), median", ms(b)),
        Row('`python -c "import openai"`, median', ms(o), note=f"{o / b:.1f}× the bare start"),
        Row(
            "`cody-lsp --help`",
            ms(median(helps)),
            f"≤ {HELP_GOAL * 1000:.0f} ms",
            median(helps) <= HELP_GOAL,
            ratio(helps),
        ),
        Row(
            "`cody-lsp config`",
            ms(median(configs)),
            f"≤ {CONFIG_GOAL * 1000:.0f} ms",
            median(configs) <= CONFIG_GOAL,
            ratio(configs),
        ),
        Row(
            "`cody-lsp sessions` (a folder's list)",
            ms(median(sessions)),
            f"≤ {SESSIONS_GOAL * 1000:.0f} ms",
            median(sessions) <= SESSIONS_GOAL,
            ratio(sessions),
        ),
        Row(
            "`cody-lsp chat`: start → its prompt shown (a pty)",
            ms(median(chats)),
            f"≤ {CHAT_GOAL * 1000:.0f} ms and ≤ {CHAT_RATIO:.0f}× bare",
            median(chats) <= CHAT_GOAL and median(chats) / b <= CHAT_RATIO,
            ratio(chats),
        ),
        Row(
            "`cody-lsp run` against a model that answers at once: start → exit",
            ms(median(runs)),
            f"≤ {RUN_GOAL * 1000:.0f} ms and ≤ `import openai` + {RUN_OVER_OPENAI * 1000:.0f} ms",
            median(runs) <= RUN_GOAL and median(runs) <= o + RUN_OVER_OPENAI,
            f"{ratio(runs)}; `import openai` + {ms(median(runs) - o)}",
        ),
    ]
    report(
        "cli_start",
        "Terminal commands' start-up",
        rows,
        args,
        extra={
            "bare": bare,
            "import_openai": bare_openai,
            "help": helps,
            "config": configs,
            "sessions": sessions,
            "chat_prompt": chats,
            "run": runs,
        },
    )


if __name__ == "__main__":
    main()
