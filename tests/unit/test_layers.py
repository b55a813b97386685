"""The package's folders are its layers, and the imports keep to them.

Every module of cody_lsp belongs to one layer (its folder). A module imports only modules of
its own layer or of lower ones — imports inside functions and under TYPE_CHECKING included —
and only the LSP face, the Python client and the pygls fence import pygls or lsprotocol; no
modules import each other, in a layer either. A new
folder needs a row in LAYERS (the test says so), so this map stays the architecture.
"""

from __future__ import annotations

import ast
import re
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
    "cody_lsp.server": (0, "the server package"),
    "cody_lsp.server.streams": (0, "a connection's bytes (every face's)"),
    "cody_lsp.server.tools": (1, "tools"),
    "cody_lsp.server.agent": (2, "agent"),
    "cody_lsp.server.mcp": (2, "MCP servers' tools"),
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
MAY_IMPORT_PYGLS = ("cody_lsp.server.lsp", "cody_lsp.client", "cody_lsp.private_api.jsonrpc")


METHOD = re.compile(r"cody/[A-Za-z]+")


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


def test_only_the_lsp_face_and_the_client_import_pygls_or_lsprotocol():
    wrong = []
    for path in modules():
        name = module_name(path)
        if any(name == m or name.startswith(m + ".") for m in MAY_IMPORT_PYGLS):
            continue
        for line, target in imports(path):
            if target.split(".")[0] in WIRE_LIBRARIES:
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}")
    assert not wrong, "pygls/lsprotocol outside the LSP face and the client:\n" + "\n".join(wrong)


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
