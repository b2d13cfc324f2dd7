"""Shared test set-up: make the collection importable as ``ansible_collections.gpufleet.runtime_gate``.

The repository root is the collection root; ``.collections/ansible_collections/gpufleet/runtime_gate``
is a committed symlink back to it, so the same path serves ansible.cfg and these imports.
"""
import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
COLLECTIONS_ROOT = REPO_ROOT / ".collections"

if str(COLLECTIONS_ROOT) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS_ROOT))
if str(REPO_ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(REPO_ROOT / "tests"))

pytest_plugins = ["support.kube_fixtures"]

os.environ.setdefault("ANSIBLE_CONFIG", str(REPO_ROOT / "ansible.cfg"))
