"""The node side runs on the managed nodes' Python (>= 3.8, standard library only): every file of it parses as
Python 3.8 and imports only the standard library, Ansible's module_utils (Ansiballz ships them with the module) and
other node-side files; a library imported inside ``try: … except ImportError`` (grpc, used when the node has it) is
optional and allowed.

Which files are node-side is derived, not listed: the node modules are the module files with code that need no
third-party library (the cluster modules say theirs with ``missing_required_lib`` and run where the API is reached),
and the node side is every collection file those modules reach through their imports, transitively — so it follows
the code when a file is split or moved.
"""
import ast
import sys
from pathlib import Path

import pytest
from support.paths import REPO_ROOT

MODULE_UTILS = REPO_ROOT / "plugins" / "module_utils"

COLLECTION_PREFIX = "ansible_collections.gpufleet.runtime_gate."
MODULES = REPO_ROOT / "plugins" / "modules"
# The standard library of this (controller) Python less what 3.8 lacks: zoneinfo and graphlib came in 3.9, tomllib in
# 3.11 (docs.python.org "What's New In Python 3.9" / "3.11", New Modules).
STDLIB_38 = set(sys.stdlib_module_names) - {"zoneinfo", "graphlib", "tomllib"}
# Always node-side, whatever the derivation says (the containerd_facts gatherer and the role's probe).
KNOWN_NODE_MODULES = {"containerd_facts", "containerd_runtime_config_probe"}


def _tree(path):
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _is_node_module(path):
    names = {node.id for node in ast.walk(_tree(path)) if isinstance(node, ast.Name)}
    names |= {alias.asname or alias.name for node in ast.walk(_tree(path)) if isinstance(node, ast.ImportFrom)
              for alias in node.names}
    return "AnsibleModule" in names and "missing_required_lib" not in names


def node_modules():
    return sorted(path for path in MODULES.glob("*.py") if _is_node_module(path))


def imported_names(path):
    """Every module name ``path`` imports, anywhere in it (top level, functions, try blocks); relative imports
    resolved against the file's package."""
    package = ".".join(("ansible_collections", "gpufleet", "runtime_gate") + path.relative_to(REPO_ROOT).parent.parts)
    names = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                if node.module:
                    names.append(f"{base}.{node.module}")
                else:  # from . import name: each name is a module of the package
                    names.extend(f"{base}.{alias.name}" for alias in node.names)
            else:
                names.append(node.module)
    return names


def collection_file(name):
    """The repository file of a collection module name, or None when it names no file (a package attribute)."""
    relative = Path(*name[len(COLLECTION_PREFIX):].split("."))
    for candidate in (REPO_ROOT / relative.with_suffix(".py"), REPO_ROOT / relative / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def node_side_files():
    """The node modules and every collection file they reach through imports."""
    pending, seen = list(node_modules()), set()
    while pending:
        path = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in imported_names(path):
            if name.startswith(COLLECTION_PREFIX):
                target = collection_file(name)
                assert target is not None or collection_file(name.rsplit(".", 1)[0]), f"{path}: imports {name}, no such file"
                if target is not None:
                    pending.append(target)
    return sorted(seen)


def optional_imports(path):
    """Names imported inside a ``try`` that handles ImportError: used when the node has them, never required."""
    names = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Try) and any(
            isinstance(handler.type, ast.Name) and handler.type.id in ("ImportError", "ModuleNotFoundError")
            for handler in node.handlers
        ):
            for statement in node.body:
                if isinstance(statement, ast.Import):
                    names.update(alias.name for alias in statement.names)
                elif isinstance(statement, ast.ImportFrom) and not statement.level:
                    names.add(statement.module)
    return names


def _allowed(name):
    top = name.split(".")[0]
    return top in STDLIB_38 or top == "__future__" or name.startswith("ansible.module_utils.") \
        or name.startswith(COLLECTION_PREFIX)


def test_the_node_modules_are_found_by_their_imports():
    assert KNOWN_NODE_MODULES <= {path.stem for path in node_modules()}


def test_the_node_side_reaches_the_gatherers_helpers():
    reached = {path.relative_to(MODULE_UTILS).as_posix() for path in node_side_files() if MODULE_UTILS in path.parents}
    # containerd_facts gathers with these (a derivation that lost them would test nothing).
    assert {"_node/evidence.py", "_node/gather.py", "_node/imports.py", "_node/toml_imports.py", "_node/cri_status.py",
            "_node/goglob.py", "_node/redaction.py"} <= reached


def test_node_side_code_lives_in_the_node_package():
    """The folders show the sides: what runs on nodes is in module_utils/_node (plus the modules' argument specs),
    and nothing there is controller-only."""
    reached = {path.relative_to(MODULE_UTILS).as_posix() for path in node_side_files() if MODULE_UTILS in path.parents}
    elsewhere = sorted(name for name in reached if not name.startswith(("_node/", "_specs/")))
    assert elsewhere == [], f"node-side code outside module_utils/_node: {elsewhere}"
    unreached = sorted(path.relative_to(MODULE_UTILS).as_posix() for path in (MODULE_UTILS / "_node").glob("*.py")
                       if path.name != "__init__.py")
    assert set(unreached) <= reached, f"module_utils/_node holds files no node module uses: {sorted(set(unreached) - reached)}"


@pytest.mark.parametrize("path", node_side_files(), ids=lambda path: str(path.relative_to(REPO_ROOT)))
def test_node_side_file_is_python_38_with_standard_library_imports_only(path):
    source = path.read_text(encoding="utf-8")
    ast.parse(source, filename=str(path), feature_version=(3, 8))
    optional = optional_imports(path)
    foreign = sorted(name for name in imported_names(path) if not _allowed(name) and name not in optional)
    assert foreign == [], f"{path.relative_to(REPO_ROOT)} runs on nodes but imports {foreign}"
    # A collection file it imports is node-side by construction (node_side_files follows it), so it is checked too.
