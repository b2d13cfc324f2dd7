"""The collection as a user gets it: built into a tarball with ansible-galaxy and installed from it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from support.paths import REPO_ROOT

BIN = Path(sys.executable).parent


def install_collection(where: Path, environment: dict) -> Path:
    """``ansible-galaxy collection build`` of the checkout into ``where``, then ``install`` of that tarball into
    ``where/collections``; returns that collections directory. A failing step fails the test with its stderr."""
    built = subprocess.run([BIN / "ansible-galaxy", "collection", "build", str(REPO_ROOT), "--output-path", str(where)],
                           cwd=where, env=environment, capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr
    (tarball,) = where.glob("gpufleet-runtime_gate-*.tar.gz")
    collections = where / "collections"
    installed = subprocess.run([BIN / "ansible-galaxy", "collection", "install", "--force", str(tarball), "-p", str(collections)],
                               cwd=where, env=environment, capture_output=True, text=True, check=False)
    assert installed.returncode == 0, installed.stderr
    return collections
