"""Our verdict against what real containerd daemons serve: generated trees x every release x three modes.

The oracle is the real daemon (tests/support/differential.py): for each generated tree (tests/support/config_trees.py)
and each release (1.6, 1.7, 2.0, 2.1, 2.2, 2.3, 2.4), a daemon started on the tree says which handlers are served — for
the first 20 trees by starting a pod sandbox of each handler it lists (`crictl runp`, sandbox truth), for the others by
`crictl info`. Every disagreement
— a false OK, a false MISSING, UNKNOWN where the daemon serves, a confirmed cause without its reason code — fails
with the tree printed. `make differential` runs the same over 1,000 trees (tools/differential).
"""
import io
import os
import sys

import pytest
from support.paths import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "tools"))
TREES = int(os.environ.get("RUNTIME_GATE_DIFFERENTIAL_TREES", "100"))
# The first SANDBOX_TREES trees use sandbox truth (a handler is served when its pod sandbox starts), the rest crictl info.
SANDBOX_TREES = min(TREES, 20)
RELEASES = {"1.6", "1.7", "2.0", "2.1", "2.2", "2.3", "2.4"}
# Daemons at once. A daemon mostly waits (boot, the CRI's answer, a sandbox's start; 0.2-0.35 s of CPU each): 6 at once
# keep two cores busier than 3 did (RUNTIME_GATE_DIFFERENTIAL_JOBS overrides it).
JOBS = int(os.environ.get("RUNTIME_GATE_DIFFERENTIAL_JOBS", "6"))


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
    outcomes, generated = tool.run(TREES, 1, JOBS, out=None, sandbox_trees=SANDBOX_TREES)
    return tool, outcomes, generated


def test_every_release_ran_every_tree(differential):
    tool, outcomes, _generated = differential
    table = tool.totals(outcomes)
    assert {".".join(release.split(".")[:2]) for release, _truth in table} == RELEASES
    assert {(truth, row["trees"]) for (_release, truth), row in table.items()} == {
        ("sandbox", SANDBOX_TREES), ("crictl info", TREES - SANDBOX_TREES)} - {("crictl info", 0)}
    # The generator must keep reaching both sides: trees whose CRI serves, and trees it refuses.
    for release in {release for release, _truth in table}:
        cri = sum(row["cri"] for (each, _truth), row in table.items() if each == release)
        assert 0 < cri < TREES, f"containerd {release}: CRI up on {cri} of {TREES} trees"
        # Sandbox truth is real: on every release some sandboxes start and some do not.
        started, failed = table[(release, "sandbox")]["sandboxes"]
        assert started and failed, f"containerd {release}: {started} sandboxes started, {failed} failed"


def test_no_disagreement_with_the_real_daemons(differential, record_property):
    tool, outcomes, generated = differential
    printed = io.StringIO()
    disagreements = tool.report(outcomes, generated, out=printed)
    never_set = tool.coverage(generated, tool.releases(), out=printed)
    # The totals end the run's terminal output, from a pytest-xdist worker too (tests/conftest.py).
    record_property("terminal_summary", printed.getvalue())
    assert disagreements == 0, printed.getvalue()
    # Every start-up key and every key of a runtime table or of runc's options that some release's `config default`
    # prints was set by at least one of these trees, so real daemons decided it.
    assert never_set == [], printed.getvalue()
