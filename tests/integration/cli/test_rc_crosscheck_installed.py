"""bin/rc-crosscheck from an installed collection, and with a Python it cannot run with (issue 14).

Exit 1 means MISSING: a crash (a dependency missing, an unexpected exception) must never end with a traceback's 1,
but with 2 and one line on stderr. The installed copy (ansible-galaxy collection build + install) has no .venv
and no .collections/, so it finds its ansible_collections root from its own location.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.installed import install_collection
from support.paths import REPO_ROOT

BIN = Path(sys.executable).parent
CHECKOUT_SCRIPT = REPO_ROOT / "bin" / "rc-crosscheck"
DEMO = REPO_ROOT / "inventory" / "demo"
# The README's (and docs/usage.md's) example, with paths relative to the checkout (the runs use cwd=REPO_ROOT).
GPU_NODE_03 = ["--runtimeclasses", "inventory/demo/cluster.yaml", "inventory/demo/nodes/gpu-node-03/config-dump.toml"]
GPU_NODE_01_OK = ["--runtimeclasses", "inventory/demo/cluster.yaml", "--node-labels", "nvidia.com/gpu.present=true",
                  "inventory/demo/nodes/gpu-node-01/config-dump.toml"]


@pytest.fixture(scope="module")
def installed_script(tmp_path_factory):
    where = tmp_path_factory.mktemp("installed")
    collections = install_collection(where, {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(where)})
    script = collections / "ansible_collections" / "gpufleet" / "runtime_gate" / "bin" / "rc-crosscheck"
    assert script.is_file() and os.access(script, os.X_OK)
    assert not (script.parent.parent / ".venv").exists() and not (script.parent.parent / ".collections").exists()
    return script


def clean_environment(**extra):
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("PYTHONPATH", "RC_CROSSCHECK_PYTHON", "ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_COLLECTIONS_PATHS")}
    return {**environment, **extra}


def run(command, environment=None, cwd=REPO_ROOT):
    return subprocess.run([str(part) for part in command], cwd=cwd, env=environment or clean_environment(),
                          capture_output=True, text=True, check=False)


def assert_cannot_judge(completed, *fragments):
    assert completed.returncode == 2, (completed.returncode, completed.stdout, completed.stderr)
    assert completed.stdout == ""
    assert len(completed.stderr.splitlines()) == 1, completed.stderr
    assert completed.stderr.startswith("rc-crosscheck: ") and "Traceback" not in completed.stderr
    for fragment in fragments:
        assert fragment in completed.stderr, completed.stderr


@pytest.mark.parametrize("how", ["with-the-python", "executable-on-path", "rc-crosscheck-python"])
def test_installed_copy_judges_a_demo_dump(installed_script, how):
    if how == "with-the-python":  # /path/to/python .../bin/rc-crosscheck: the interpreter it runs with
        command, environment = [sys.executable, installed_script], clean_environment()
    elif how == "executable-on-path":  # no .venv beside an installed collection: python3 from PATH
        command, environment = [installed_script], clean_environment(PATH=f"{BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    else:
        command, environment = [installed_script], clean_environment(RC_CROSSCHECK_PYTHON=sys.executable)
    completed = run(command + GPU_NODE_03, environment)
    assert (completed.returncode, completed.stdout, completed.stderr) == (1, "MISSING=nvdia\nMISSING=nvidia-cdi\n", "")
    completed = run(command + GPU_NODE_01_OK, environment)
    assert (completed.returncode, completed.stdout, completed.stderr) == (0, "OK\n", "")


def test_installed_copy_runs_its_own_code_not_the_checkouts(installed_script, tmp_path):
    # Run from a directory with nothing of the checkout around it: the modules come from the installed tree.
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import runpy, sys\n"
        "sys.argv = [sys.argv[1], '--help']\n"
        "try:\n    runpy.run_path(sys.argv[0], run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "import ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict as verdict\n"
        "print('LOADED', verdict.__file__)\n"
    )
    completed = run([sys.executable, probe, installed_script], cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert f"LOADED {installed_script.parent.parent}/plugins/plugin_utils/_verdict.py" in completed.stdout


def shadow(tmp_path, package, code=""):
    """A directory for PYTHONPATH whose ``package`` hides the real one (as a Python without it would behave)."""
    directory = tmp_path / f"without-{package}"
    (directory / package).mkdir(parents=True)
    (directory / package / "__init__.py").write_text(code)
    return directory


@pytest.mark.parametrize("which", ["installed", "checkout"])
def test_a_python_without_ansible_core_judges_a_dump_file(installed_script, tmp_path, which):
    # A checkout without .venv runs python3, which may lack ansible-core: `ansible` without its module_utils. Judging a
    # dump file needs none of it: the CLI imports the collection's module_utils only (the node gathering included).
    script = installed_script if which == "installed" else CHECKOUT_SCRIPT
    completed = run([sys.executable, script, *GPU_NODE_03], clean_environment(PYTHONPATH=str(shadow(tmp_path, "ansible"))))
    assert (completed.returncode, completed.stdout, completed.stderr) == (1, "MISSING=nvdia\nMISSING=nvidia-cdi\n", "")


def test_rc_crosscheck_python_without_ansible_core_judges_a_dump_file(installed_script, tmp_path):
    environment = clean_environment(PYTHONPATH=str(shadow(tmp_path, "ansible")), RC_CROSSCHECK_PYTHON=sys.executable)
    completed = run([installed_script, *GPU_NODE_03], environment)
    assert (completed.returncode, completed.stdout, completed.stderr) == (1, "MISSING=nvdia\nMISSING=nvidia-cdi\n", "")


def test_a_python_without_pyyaml_exits_2_with_one_line(installed_script, tmp_path):
    without_yaml = shadow(tmp_path, "yaml", "raise ModuleNotFoundError(\"No module named 'yaml'\", name='yaml')\n")
    completed = run([sys.executable, installed_script, *GPU_NODE_03], clean_environment(PYTHONPATH=str(without_yaml)))
    assert_cannot_judge(completed)
    assert "yaml" in completed.stderr.lower()


@pytest.mark.parametrize("which", ["installed", "checkout"])
def test_an_unexpected_crash_exits_2_with_one_line(installed_script, tmp_path, which):
    # Any exception the CLI did not foresee (here: reading standard input blows up) is "cannot judge", never 1.
    crash = tmp_path / "crash"
    crash.mkdir()
    (crash / "sitecustomize.py").write_text(
        "import sys\n\n\nclass BrokenStdin:\n    def read(self, *args):\n"
        "        raise RuntimeError('simulated crash\\nwith a second line')\n\n\nsys.stdin = BrokenStdin()\n"
    )
    script = installed_script if which == "installed" else CHECKOUT_SCRIPT
    completed = run([sys.executable, script, "--runtimeclasses", "-", "inventory/demo/nodes/gpu-node-03/config-dump.toml"],
                    clean_environment(PYTHONPATH=str(crash)))
    assert_cannot_judge(completed, "RuntimeError: simulated crash with a second line")


def test_a_script_outside_its_collection_exits_2_with_one_line(tmp_path):
    lonely = tmp_path / "bin" / "rc-crosscheck"
    lonely.parent.mkdir()
    lonely.write_text(CHECKOUT_SCRIPT.read_text())
    assert_cannot_judge(run([sys.executable, lonely, *GPU_NODE_03]), "cannot find the collection gpufleet.runtime_gate")
