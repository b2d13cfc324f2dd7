"""Our verdict against what real containerd daemons serve: generated trees x every release x three modes.

The oracle is the real daemon (tests/support/differential.py): for each generated tree (tests/support/config_trees.py)
and each release, `crictl info` on a daemon started on the tree says which handlers are served. Every disagreement
— a false OK, a false MISSING, UNKNOWN where the daemon serves, a confirmed cause without its reason code — fails
with the tree printed. `make differential` runs the same over 1,000 trees (tools/differential).
"""
import os
import sys

import pytest
from support.paths import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "tools"))
TREES = int(os.environ.get("RUNTIME_GATE_DIFFERENTIAL_TREES", "100"))
JOBS = 3


def _differential_tool():
    import importlib.machinery
    import importlib.util

    loader = importlib.machinery.SourceFileLoader("differential_tool", str(REPO_ROOT / "tools" / "differential"))
    spec = importlib.util.spec_from_loader("differential_tool", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def differential():
    tool = _differential_tool()
    outcomes, generated = tool.run(TREES, 1, JOBS, out=None)
    return tool, outcomes, generated


def test_every_release_ran_every_tree(differential):
    tool, outcomes, _generated = differential
    table = tool.totals(outcomes)
    assert {row["trees"] for row in table.values()} == {TREES}
    # The generator must keep reaching both sides: trees whose CRI serves, and trees it refuses.
    for release, row in table.items():
        assert 0 < row["cri"] < TREES, f"containerd {release}: CRI up on {row['cri']} of {TREES} trees"


def test_no_disagreement_with_the_real_daemons(differential, capsys):
    tool, outcomes, generated = differential
    with capsys.disabled():
        print()
        disagreements = tool.report(outcomes, generated, out=sys.stdout)
    assert disagreements == 0, "see the trees printed above"
