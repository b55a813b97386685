"""The package's folders are its layers, and the imports keep to them.

Every module of cody_lsp belongs to one layer (its folder). A module imports only modules of
its own layer or of lower ones — imports inside functions and under TYPE_CHECKING included —
and only the LSP face imports pygls or lsprotocol; no modules import each other, in a layer
either. A new folder needs a row in LAYERS (the test says so), so this map stays the
architecture. Every JSON-RPC connection — both faces', the client's — goes through the one

The faces see the run core through its facade only: they import core/api.py and no other
endpoint below them (cody_lsp/jsonrpc/), which needs nothing but the standard library.
module of core/, and touch no `_private` member of another object (the run manager's parts are
its own). The store keeps records of its own: it imports nothing of the agent, and makes no
wire type.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import cody_lsp

PACKAGE = Path(cody_lsp.__file__).parent

# Module-name prefix → (rank, layer). Higher ranks may import lower ones; the longest prefix wins.
LAYERS: dict[str, tuple[float, str]] = {
    "cody_lsp": (0, "the package's version"),
    "cody_lsp.protocol": (0, "protocol: the wire types"),
    "cody_lsp.config": (0, "configuration"),
    "cody_lsp.secrets": (0, "secrets"),
    "cody_lsp.landlock": (0, "the kernel's sandboxing system calls"),
    "cody_lsp.private_api": (0, "private APIs"),
    "cody_lsp.testing": (0, "test tooling"),
    "cody_lsp.jsonrpc": (0, "the JSON-RPC endpoint (both faces' and the client's)"),
    "cody_lsp.server": (0, "the server package"),
    "cody_lsp.server.streams": (0, "a connection's bytes (every face's)"),
    "cody_lsp.server.tools": (1, "tools"),
    "cody_lsp.server.agent": (2, "agent"),
    "cody_lsp.server.mcp": (2, "MCP servers' tools"),
    "cody_lsp.server.langservers": (2, "language servers for code_nav"),
    "cody_lsp.server.store": (3, "store"),
    "cody_lsp.server.checkpoints": (3.5, "checkpoints"),  # between the store and the core
    "cody_lsp.server.core": (4, "run core"),
    "cody_lsp.server.app": (5, "application"),
    "cody_lsp.server.lsp": (6, "the LSP face"),
    "cody_lsp.server.acp": (6, "the ACP face"),
    "cody_lsp.client": (6, "the Python client"),
    "cody_lsp.cli": (7, "the command line"),
    "cody_lsp.__main__": (7, "the command line"),
}
# Layers of one rank that must not import each other (the faces, and the client of the server).
APART = {"the LSP face", "the ACP face", "the Python client"}
# Who may import pygls or lsprotocol.
WIRE_LIBRARIES = ("pygls", "lsprotocol")
MAY_IMPORT_PYGLS = ("cody_lsp.server.lsp",)
# The JSON-RPC endpoint, and who speaks through it.
ENDPOINT = "cody_lsp.jsonrpc"
SPEAKERS = ("cody_lsp.server.lsp", "cody_lsp.server.acp", "cody_lsp.client", "cody_lsp.server.langservers")
# Modules outside the endpoint that write a JSON-RPC envelope, and why: the early starts answer
# before the endpoint is loaded (with its codec and framing); the LSP face reads a message with
# lsprotocol's message types; a socket connection refused before it is served is told why; the
# command line writes its prestarted server's `initialize` before anything (logging, asyncio, the
# endpoint) is imported, and the client's endpoint then waits for its answer (`expect_answer`).
ENVELOPES_ALLOWED = {
    "cody_lsp.client.prestart",
    "cody_lsp.server.lsp.early_initialize",
    "cody_lsp.server.acp.initialize",
    "cody_lsp.server.lsp.transport",
    "cody_lsp.server.lsp.listen",
}


METHOD = re.compile(r"cody/[A-Za-z]+")

FACES = ("cody_lsp.server.lsp", "cody_lsp.server.acp")
CORE = "cody_lsp.server.core"
CORE_FACADE = "cody_lsp.server.core.api"  # the one module of the run core a face imports
STORE = "cody_lsp.server.store"
AGENT = "cody_lsp.server.agent"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> tuple[int, str] | None:
    best = None
    for prefix, layer in LAYERS.items():
        if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, layer)
    return best[1] if best else None


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in the file."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((node.lineno, target))
            # `from . import x` may name a module
            found += [(node.lineno, f"{target}.{alias.name}") for alias in node.names if not node.module]
    return found


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_module_has_a_layer():
    missing = [module_name(p) for p in modules() if layer_of(module_name(p)) in (None, LAYERS["cody_lsp.server"])]
    missing = [m for m in missing if m not in ("cody_lsp.server",)]
    assert not missing, f"modules in no layer (add their folder to LAYERS in {__file__}): {missing}"


def test_no_module_imports_a_higher_layer_or_another_face():
    wrong = []
    for path in modules():
        rank, layer = layer_of(module_name(path)) or (0, "?")
        for line, target in imports(path):
            if not target.startswith("cody_lsp"):
                continue
            other = layer_of(target)
            if other is None:
                continue
            other_rank, other_layer = other
            if other_rank > rank or (other_layer != layer and layer in APART and other_layer in APART):
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line} ({layer}) imports {target} ({other_layer})")
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


def test_only_the_lsp_face_imports_pygls_or_lsprotocol():
    wrong = []
    for path in modules():
        name = module_name(path)
        if any(name == m or name.startswith(m + ".") for m in MAY_IMPORT_PYGLS):
            continue
        for line, target in imports(path):
            if target.split(".")[0] in WIRE_LIBRARIES:
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}")
    assert not wrong, "pygls/lsprotocol outside the LSP face:\n" + "\n".join(wrong)


def test_the_endpoint_needs_only_the_standard_library():
    """cody_lsp/jsonrpc/ imports the standard library, itself and the protocol's error codes only:
    the client and the early starts load it without pygls, lsprotocol or the server."""
    wrong = []
    for path in modules():
        if not module_name(path).startswith(ENDPOINT):
            continue
        for line, target in imports(path):
            top = target.split(".")[0]
            if top == "cody_lsp":
                if not (target.startswith(ENDPOINT) or target == "cody_lsp.protocol.errors"):
                    wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}")
            elif top not in sys.stdlib_module_names and top != "__future__":
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}")
    assert not wrong, "the endpoint imports more than the standard library:\n" + "\n".join(wrong)


def test_every_connection_speaks_through_the_one_endpoint():
    """Both faces and the client import the endpoint, and no other module makes JSON-RPC messages
    of its own (a dict with a "jsonrpc" key), but those ENVELOPES_ALLOWED says why."""
    importers = {
        speaker: [
            p
            for p in modules()
            if module_name(p).startswith(speaker) and any(t.startswith(ENDPOINT) for _, t in imports(p))
        ]
        for speaker in SPEAKERS
    }
    assert all(importers.values()), (
        f"not speaking through {ENDPOINT}: {[s for s, found in importers.items() if not found]}"
    )
    wrong = []
    for path in modules():
        name = module_name(path)
        if name.startswith(ENDPOINT) or name in ENVELOPES_ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Dict) and any(
                isinstance(k, ast.Constant) and k.value == "jsonrpc" for k in node.keys
            ):
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not wrong, f"JSON-RPC messages made outside {ENDPOINT} (use its Endpoint):\n" + "\n".join(wrong)


def test_the_client_and_the_endpoint_load_without_pygls_or_lsprotocol():
    code = (
        "import sys, cody_lsp.client.connection, cody_lsp.jsonrpc.endpoint; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pygls', 'lsprotocol', 'openai'}))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]", f"importing the client loads {loaded}"


def _within(name: str, prefixes: tuple[str, ...] | str) -> bool:
    prefixes = (prefixes,) if isinstance(prefixes, str) else prefixes
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_the_faces_import_only_the_facade_of_the_run_core():
    """A face calls the run manager's public methods (core/runs.py `RunManager`) and uses the
    types core/api.py hands on; what is behind the facade (its parts, their state) it never sees."""
    wrong = []
    for path in modules():
        if not _within(module_name(path), FACES):
            continue
        for line, target in imports(path):
            if _within(target, CORE) and not _within(target, CORE_FACADE):
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}")
    assert not wrong, f"a face importing the run core other than through {CORE_FACADE}:\n" + "\n".join(wrong)


def test_no_face_touches_a_private_member_of_another_object():
    """`x._name` in a face only for `self` (or `cls`): nothing private of the run manager, its
    parts or another module is reached from a face."""
    wrong = []
    for path in modules():
        if not _within(module_name(path), FACES):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
            ):
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {ast.unparse(node)}")
    assert not wrong, "a face touching a private member:\n" + "\n".join(wrong)


def test_the_store_imports_no_agent_module():
    """The store reads and writes records of its own (store/records.py); the core turns the
    agent's values into them and back."""
    wrong = []
    for path in modules():
        if not _within(module_name(path), STORE):
            continue
        for line, target in imports(path):
            if _within(target, AGENT):
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}")
    assert not wrong, "the store importing the agent:\n" + "\n".join(wrong)


def test_the_store_makes_no_wire_type():
    """The store returns its records, never the wire's types: it imports nothing of protocol/wire.py
    at run time (under TYPE_CHECKING it may name the protocol's string sets, e.g. SessionMode)."""
    wrong = []
    for path in modules():
        if not _within(module_name(path), STORE):
            continue
        tree = ast.parse(path.read_text())
        typing_only = {
            id(node)
            for branch in ast.walk(tree)
            if isinstance(branch, ast.If) and isinstance(branch.test, ast.Name) and branch.test.id == "TYPE_CHECKING"
            for node in ast.walk(branch)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("protocol.wire"):
                if id(node) not in typing_only:
                    wrong.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not wrong, "the store importing protocol/wire.py at run time:\n" + "\n".join(wrong)


def test_the_core_builds_no_wire_message():
    """The run core emits typed values; only faces serialize them (to_wire, chunk_to_wire, parse)."""
    wrong = []
    for path in sorted((PACKAGE / "server").rglob("*.py")):
        name = module_name(path)
        if name.startswith(("cody_lsp.server.lsp", "cody_lsp.server.acp")):
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.endswith("protocol.wire"):
                bad = [a.name for a in node.names if a.name in ("to_wire", "chunk_to_wire", "parse", "chunk_from_wire")]
                if bad:
                    wrong.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} imports {', '.join(bad)}")
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and METHOD.fullmatch(node.value):
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} names the method {node.value!r}")
    assert not wrong, "wire messages made outside the faces:\n" + "\n".join(wrong)


def test_no_import_cycles():
    """No two modules import each other, however far round (imports inside functions and under
    TYPE_CHECKING included): within a layer too, what a module needs of a higher one's class
    is a Protocol of its own (e.g. lsp/client_port.py's `Server`)."""
    names = {module_name(p): p for p in modules()}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        targets = set()
        for _, target in imports(path):
            while target and target not in names:  # a package's name, or a name the module defines
                target = target.rpartition(".")[0]
            # A package the module is in is loaded before it anyway (`from . import x` names it).
            if target and target != name and not name.startswith(target + "."):
                targets.add(target)
        graph[name] = targets
    # Tarjan's strongly connected components: a component of more than one module is a cycle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    assert not cycles, "modules that import each other (round a cycle):\n" + "\n".join(" ↔ ".join(c) for c in cycles)
