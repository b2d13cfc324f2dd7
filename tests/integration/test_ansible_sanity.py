"""`ansible-test sanity` over the committed collection (validate-modules, pylint, pep8, yamllint, ...)."""
import subprocess

from support.paths import REPO_ROOT
from support.tools import require_command


def test_ansible_test_sanity_is_clean():
    require_command("git", "git")
    require_command("shellcheck", "shellcheck")
    completed = subprocess.run(
        [str(REPO_ROOT / "tools" / "ansible-sanity")], cwd=REPO_ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False, timeout=900
    )
    report = "\n".join(line for line in (completed.stdout + completed.stderr).splitlines() if line.startswith(("ERROR", "FATAL")))
    assert completed.returncode == 0, report or completed.stdout[-4000:] + completed.stderr[-4000:]
