"""Shared test set-up: make the collection importable as ``ansible_collections.gpufleet.runtime_gate``.

The repository root is the collection root; ``.collections/ansible_collections/gpufleet/runtime_gate``
is a committed symlink back to it, so the same path serves ansible.cfg and these imports.
"""
import os
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
COLLECTIONS_ROOT = REPO_ROOT / ".collections"

if str(COLLECTIONS_ROOT) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS_ROOT))
if str(REPO_ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(REPO_ROOT / "tests"))

pytest_plugins = ["support.kube_fixtures"]

os.environ.setdefault("ANSIBLE_CONFIG", str(REPO_ROOT / "ansible.cfg"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Under `make check` (RUNTIME_GATE_CHECK) a skip is a failure: every test it selects must run, here."""
    del item, call
    report = yield
    if os.environ.get("RUNTIME_GATE_CHECK") and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"`make check` skips no test it selects, and this one skipped: {reason}"
    return report


# The files that take longest, first: under pytest-xdist (`make test` runs `--dist loadfile --no-loadscope-reorder`) each
# file runs whole on one worker in this order, so the longest start at once instead of ending the run alone.
SLOWEST_FIRST = ("tests/integration/differential/", "tests/integration/test_ansible_sanity.py", "tests/integration/role/",
                 "tests/integration/pods/", "tests/integration/daemon/", "tests/integration/cluster/")


def _slowness_rank(item):
    path = item.nodeid
    return next((rank for rank, prefix in enumerate(SLOWEST_FIRST) if path.startswith(prefix)), len(SLOWEST_FIRST))


def pytest_collection_modifyitems(items):
    items.sort(key=_slowness_rank)  # stable: the collection order within each rank


# Directories whose files share a package-scoped fixture (one real cluster): one unit of work, on one worker.
ONE_WORKER_DIRECTORIES = ("tests/integration/cluster/",)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile``: each file on one worker, and each of ONE_WORKER_DIRECTORIES whole on one worker."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling  # pylint: disable=import-outside-toplevel  # only under xdist

    class FileOrSharedDirectory(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            path = nodeid.split("::", 1)[0]
            return next((directory for directory in ONE_WORKER_DIRECTORIES if path.startswith(directory)), path)

    return FileOrSharedDirectory(config, log)


_SUMMARIES = []


def pytest_runtest_logreport(report):
    """A test's ``record_property("terminal_summary", text)``, kept for the end of the run (from any xdist worker)."""
    if report.when == "call":
        _SUMMARIES.extend((report.nodeid, value) for name, value in report.user_properties if name == "terminal_summary")


def pytest_terminal_summary(terminalreporter):
    for nodeid, text in _SUMMARIES:
        terminalreporter.write_sep("-", nodeid)
        terminalreporter.write(text)


def pytest_report_header(config):
    """Every third-party component version the run uses, so a result can be traced to its releases."""
    del config
    import json
    import shutil
    import subprocess

    lines = []
    for binary in ("containerd", "kubectl"):
        path = shutil.which(binary)
        if path:
            command = [path, "--version"] if binary == "containerd" else [path, "version", "--client"]
            output = subprocess.run(command, capture_output=True, text=True, check=False).stdout.strip().splitlines()
            lines.append(f"{binary} ({path}): {output[0] if output else '?'}")
    manifest = Path(os.environ.get("RUNTIME_GATE_CACHE") or Path.home() / ".cache" / "gpufleet-runtime-gate") / "bin" / "components.json"
    built = json.loads(manifest.read_text(encoding="utf-8")) if manifest.is_file() else {}
    lines.append("built from the Go module proxy (tools/build-components): " + (
        ", ".join(f"{name} {entry['version']}" for name, entry in sorted(built.items())) or "none yet"))
    return lines
