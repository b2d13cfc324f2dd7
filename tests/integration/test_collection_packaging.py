"""The collection builds, installs offline, and every module's documentation renders."""
import json
import subprocess
import sys
from pathlib import Path

from support.paths import REPO_ROOT

BIN = Path(sys.executable).parent
MODULES = sorted(path.stem for path in (REPO_ROOT / "plugins" / "modules").glob("*.py"))


def test_every_module_is_documented_and_renders():
    assert {"containerd_facts", "runtimeclass_info", "handler_crosscheck", "crosscheck_summary"} <= set(MODULES)
    completed = subprocess.run(
        [BIN / "ansible-doc", "--json", *[f"gpufleet.runtime_gate.{module}" for module in MODULES]],
        cwd=REPO_ROOT, capture_output=True, text=True, check=False,
    )
    assert completed.returncode == 0, completed.stderr
    documented = json.loads(completed.stdout)
    for module in MODULES:
        doc = documented[f"gpufleet.runtime_gate.{module}"]
        assert doc["doc"]["short_description"] and doc["examples"] and doc["return"], module
        assert "attributes" in doc["doc"], module


def test_build_produces_an_installable_artifact(tmp_path):
    built = subprocess.run(
        [BIN / "ansible-galaxy", "collection", "build", str(REPO_ROOT), "--output-path", str(tmp_path)],
        capture_output=True, text=True, check=False,
    )
    assert built.returncode == 0, built.stderr
    (tarball,) = tmp_path.glob("gpufleet-runtime_gate-*.tar.gz")
    listing = subprocess.run(["tar", "-tzf", str(tarball)], capture_output=True, text=True, check=True).stdout.split()
    assert "plugins/modules/containerd_facts.py" in listing and "playbooks/crosscheck.yml" in listing
    assert not any(name.startswith((".venv", ".collections", "out/")) for name in listing)

    installed = subprocess.run(
        [BIN / "ansible-galaxy", "collection", "install", "--force", str(tarball), "-p", str(tmp_path / "collections")],
        capture_output=True, text=True, check=False,
    )
    assert installed.returncode == 0, installed.stderr
    root = tmp_path / "collections" / "ansible_collections" / "gpufleet" / "runtime_gate"
    assert (root / "plugins" / "action" / "handler_crosscheck.py").is_file()

    # the installed copy, not the checkout, serves the FQCN
    doc = subprocess.run(
        [BIN / "ansible-doc", "gpufleet.runtime_gate.containerd_facts"], cwd=tmp_path,
        env={"ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "collections"), "PATH": str(BIN) + ":/usr/bin:/bin", "HOME": str(tmp_path)},
        capture_output=True, text=True, check=False,
    )
    assert doc.returncode == 0, doc.stderr
    assert str(root) in doc.stdout
