"""ansible-lint's production profile is clean on the collection (issue 14 item 9), and so is a user's plain
`ansible-lint`, without our .ansible-lint, on the collection as installed from its tarball (issue 25 item 7).

The first runs as a developer would from the checkout root, offline, with the collection resolved through .collections;
.ansible-lint says what it excludes and why. The second runs where a user's collection lives, with ansible-lint's
own defaults (offline only, so the test needs no network). A playbook with known violations, linted with the same
profile, shows that the linter does report findings (so the clean runs mean something).
"""
import os
import subprocess
import sys
from pathlib import Path

from support.installed import install_collection
from support.paths import COLLECTIONS_ROOT, REPO_ROOT

BIN = Path(sys.executable).parent
ENVIRONMENT = {**os.environ, "PATH": f"{BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}",
               "ANSIBLE_COLLECTIONS_PATH": str(COLLECTIONS_ROOT), "NO_COLOR": "1"}


def ansible_lint(cwd, *arguments):
    assert (BIN / "ansible-lint").exists(), "ansible-lint is missing: .venv/bin/pip install -r requirements-test.txt"
    return subprocess.run([BIN / "ansible-lint", "--nocolor", *arguments], cwd=cwd, env=ENVIRONMENT,
                          capture_output=True, text=True, check=False, timeout=900)


def test_the_collection_passes_the_production_profile():
    completed = ansible_lint(REPO_ROOT)
    assert completed.returncode == 0, completed.stdout[-6000:] + completed.stderr[-6000:]
    assert "Profile 'production' was required, and it passed" in completed.stderr + completed.stdout, completed.stderr


def test_a_plain_ansible_lint_passes_on_the_installed_collection(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    environment = {**{key: value for key, value in ENVIRONMENT.items() if not key.startswith("ANSIBLE_")}, "HOME": str(home)}
    collections = install_collection(tmp_path, environment)
    root = collections / "ansible_collections" / "gpufleet" / "runtime_gate"
    assert not (root / ".ansible-lint").exists() and not (root / ".config" / "ansible-lint.yml").exists()
    completed = subprocess.run([BIN / "ansible-lint", "--nocolor", "--offline"], cwd=root,
                               env={**environment, "ANSIBLE_COLLECTIONS_PATH": str(collections)},
                               capture_output=True, text=True, check=False, timeout=900)
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output[-6000:]
    assert "Passed:" in output and "0 failure(s), 0 warning(s)" in output, output[-3000:]


def test_the_production_profile_reports_a_bad_playbook(tmp_path):
    (tmp_path / "bad.yml").write_text(
        "---\n- hosts: all\n  tasks:\n    - command: echo hello\n    - shell: cat /etc/hostname | wc -l\n")
    completed = ansible_lint(tmp_path, "--offline", "--profile", "production", "bad.yml")
    output = completed.stdout + completed.stderr
    assert completed.returncode != 0, output
    for rule in ("fqcn[action-core]", "name[play]", "no-changed-when"):
        assert rule in output, (rule, output[-4000:])
