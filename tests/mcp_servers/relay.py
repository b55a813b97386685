"""A stdio relay for the MCP tests: runs a real MCP server as its child and passes the lines of
JSON-RPC both ways, writing each line the client sent to a log file (what the server received:
the test reads `notifications/cancelled` there).

    python relay.py --log FILE -- COMMAND [ARGS...]

The relay ends when its child does, or when its stdin closes (it closes the child's stdin, then
waits for it).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None

    def from_server() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()

    threading.Thread(target=from_server, daemon=True).start()
    with open(args.log, "ab", buffering=0) as log:
        for line in sys.stdin.buffer:
            log.write(line)
            try:
                child.stdin.write(line)
                child.stdin.flush()
            except BrokenPipeError:
                break
    try:
        child.stdin.close()
    except BrokenPipeError:
        pass
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
