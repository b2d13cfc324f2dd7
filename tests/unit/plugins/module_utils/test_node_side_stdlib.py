"""The code containerd_facts ships to nodes parses as Python 3.8 and imports only the standard library and itself."""
import ast
import sys

import pytest
from support.paths import REPO_ROOT

MODULE_UTILS = REPO_ROOT / "plugins" / "module_utils"
PACKAGE = "ansible_collections.gpufleet.runtime_gate.plugins.module_utils."
# Imported inside a try block, used only when the node's Python has it (_cri_status: the daemon's CRI status over gRPC).
OPTIONAL = {"_cri_status": {"grpc"}}
NODE_SIDE = ["_containerd_release", "_node_gather", "_node_imports", "_node_listings", "_node_binaries", "_node_facts",
             "_node_evidence", "_cri_status", "_goglob", "_toml_imports", "_node_redaction", "_specs.containerd_facts"]


def imports_of(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.module


@pytest.mark.parametrize("name", NODE_SIDE)
def test_node_side_is_python_38_standard_library(name):
    path = MODULE_UTILS / (name.replace(".", "/") + ".py")
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path), feature_version=(3, 8))
    for module in imports_of(tree):
        if module.startswith(PACKAGE):
            assert module[len(PACKAGE):] in NODE_SIDE, f"{name} imports {module}, which is not node-side code"
        else:
            top = module.split(".")[0]
            assert top in sys.stdlib_module_names or top in OPTIONAL.get(name, ()), f"{name} imports {module}"


def test_the_node_module_imports_only_node_side_code():
    tree = ast.parse((REPO_ROOT / "plugins" / "modules" / "containerd_facts.py").read_text(encoding="utf-8"),
                     feature_version=(3, 8))
    shipped = {module[len(PACKAGE):] for module in imports_of(tree) if module.startswith(PACKAGE)}
    assert shipped and shipped <= set(NODE_SIDE), shipped
