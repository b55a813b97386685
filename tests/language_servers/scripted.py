"""A small language server for the tests: LSP over stdio, answers from a script.

`python scripted.py MODE`: `crash` — answers initialize, then exits with code 3 (saying "boom" on
stderr) at the first definition request; `crash-once` — the same, once (it leaves a file named by
$SCRIPTED_LSP_LOG + ".crashed"), then answers as the default does; `slow` — never answers definition; `utf8` — agrees on the
UTF-8 position encoding and answers definition with the position it was asked (in bytes), so a test
sees the conversion. It records every message it receives in $SCRIPTED_LSP_LOG (one JSON a line).
"""

from __future__ import annotations

import json
import os
import sys
import time


def read() -> dict | None:
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
    return json.loads(sys.stdin.buffer.read(length or 0))


def write(message: dict) -> None:
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    log = os.environ.get("SCRIPTED_LSP_LOG")
    while True:
        message = read()
        if message is None:
            return
        if log:
            with open(log, "a") as f:
                f.write(json.dumps(message) + "\n")
        method, msg_id = message.get("method"), message.get("id")
        if method == "initialize":
            capabilities = {"definitionProvider": True, "textDocumentSync": 1}
            if mode == "utf8":
                capabilities["positionEncoding"] = "utf-8"
            write({"jsonrpc": "2.0", "id": msg_id, "result": {"capabilities": capabilities}})
        elif method == "textDocument/definition":
            crashed = f"{log}.crashed" if log else None
            if mode == "crash" or (mode == "crash-once" and crashed and not os.path.exists(crashed)):
                if crashed:
                    open(crashed, "w").close()
                sys.stderr.write("boom\n")
                sys.stderr.flush()
                os._exit(3)
            if mode == "slow":
                time.sleep(60)
            params = message["params"]
            write(
                {
                    "jsonrpc": "2.0",
                    "id": msg_id,
                    "result": {
                        "uri": params["textDocument"]["uri"],
                        "range": {"start": params["position"], "end": params["position"]},
                    },
                }
            )
        elif method == "shutdown":
            write({"jsonrpc": "2.0", "id": msg_id, "result": None})
        elif method == "exit":
            return
        elif msg_id is not None:
            write({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": f"no {method}"}})


if __name__ == "__main__":
    main()
