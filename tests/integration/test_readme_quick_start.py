"""The README's quick start works as written (issue 14 item 10): the FQCN playbook from a checkout root, resolved
through the checkout's ansible.cfg and .collections symlink, and the same FQCN from an installed tarball run in a
directory of the user's own, with the collection found on ANSIBLE_COLLECTIONS_PATH.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from support.installed import install_collection
from support.paths import REPO_ROOT

BIN = Path(sys.executable).parent
DEMO = REPO_ROOT / "inventory" / "demo"
DEMO_SUMMARY = "2 OK, 5 MISSING, 1 UNKNOWN of 8 hosts"


def quick_start_command():
    """The README's first quick-start command, continuation lines joined, as an argument list."""
    section = (REPO_ROOT / "README.md").read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0].replace("\\\n", " ")
    (line,) = [line for line in block.splitlines() if line.startswith(".venv/bin/ansible-playbook gpufleet.runtime_gate.crosscheck")]
    return shlex.split(line)


def clean_environment(**extra):
    # What a user's shell has: no ANSIBLE_CONFIG (make sets one), so ansible.cfg comes from the working directory.
    environment = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_")}
    return {**environment, **extra}


def test_the_fqcn_playbook_runs_from_the_checkout_root():
    command = quick_start_command()
    assert command[:2] == [".venv/bin/ansible-playbook", "gpufleet.runtime_gate.crosscheck"], command
    command[0] = str(BIN / "ansible-playbook")  # the same program when the tests run from the checkout's .venv
    completed = subprocess.run(command, cwd=REPO_ROOT, env=clean_environment(), capture_output=True, text=True, check=False)
    output = completed.stdout + completed.stderr
    assert completed.returncode == 2, output[-4000:]  # the demo fleet is broken on purpose: README, Exit codes
    assert DEMO_SUMMARY in completed.stdout, output[-4000:]
    assert "does not exist" not in output, output[-4000:]
    # as README.md and docs/console.md show it: the console callback, each MISSING line alone, the table's header
    assert re.search(r"^ +MISSING=nvidia-cdi$", completed.stdout, re.MULTILINE), output[-4000:]
    assert re.search(r"^ +nvidia-cdi: NOT_CONFIGURED_ANYWHERE$", completed.stdout, re.MULTILINE), output[-4000:]
    assert "\nHOST         VERDICT  DEFAULT  MISSING / REASON\n" in completed.stdout, output[-4000:]


def test_the_fqcn_playbook_runs_from_an_installed_collection(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    environment = clean_environment(HOME=str(home), PATH=f"{BIN}:/usr/bin:/bin")
    collections = install_collection(tmp_path, environment)
    workdir = tmp_path / "mine"
    shutil.copytree(DEMO, workdir / "demo", symlinks=True)
    completed = subprocess.run(
        [BIN / "ansible-playbook", "gpufleet.runtime_gate.crosscheck", "-i", "demo/hosts.yml",
         "-e", "runtime_gate_runtimeclasses_file=demo/cluster.yaml"],
        cwd=workdir, env={**environment, "ANSIBLE_COLLECTIONS_PATH": str(collections)},
        capture_output=True, text=True, check=False)
    output = completed.stdout + completed.stderr
    assert completed.returncode == 2, output[-4000:]
    assert DEMO_SUMMARY in completed.stdout, output[-4000:]
    # ansible-core's default callback (no ansible.cfg here): each failure one line, the summary a list of lines
    assert "\\n" not in completed.stdout, completed.stdout[-4000:]
    assert "[ERROR]: Task failed: Action failed: MISSING=nvidia-cdi (NOT_CONFIGURED_ANYWHERE)\n" in completed.stdout
    assert f'"{DEMO_SUMMARY}",' in completed.stdout, completed.stdout[-4000:]
    # The playbook that ran is the installed copy, not the checkout's.
    assert not (workdir / "ansible.cfg").exists() and str(REPO_ROOT) not in completed.stdout.replace(str(tmp_path), "")


def readme_console_example():
    """The README's quick-start console block: ``(argument list, expected stdout lines)``."""
    section = (REPO_ROOT / "README.md").read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = section.split("```console\n", 1)[1].split("```", 1)[0]
    command, *output = block.replace("\\\n", " ").splitlines()
    assert command.startswith("$ "), block
    return shlex.split(command[2:]), output


def test_the_rc_crosscheck_example_prints_what_the_readme_shows():
    arguments, expected = readme_console_example()
    assert arguments[0] == "bin/rc-crosscheck", arguments
    completed = subprocess.run(arguments, cwd=REPO_ROOT, env=clean_environment(), capture_output=True, text=True,
                               check=False)
    assert completed.stdout.splitlines() == expected, completed.stdout + completed.stderr
    assert completed.returncode == 1  # MISSING lines: README, Exit codes


def test_the_readme_install_commands_install_the_collection_outside_the_checkout(tmp_path):
    """The Install block as printed (pip left out: requirements.txt is checked to be there), with HOME a fresh one and
    the checkout stood for by a directory with its ansible.cfg, galaxy.yml and .collections symlink, which make the
    checkout itself the installed collection there (an install run inside it says "Nothing to do"), and the tarball."""
    section = (REPO_ROOT / "README.md").read_text().split("## Install", 1)[1].split("\n## ", 1)[0]
    lines = [line.split("  #", 1)[0].strip() for line in section.split("```sh\n", 1)[1].split("```", 1)[0].splitlines()]
    build, install, pip = lines[:3]
    assert build == "ansible-galaxy collection build" and pip.startswith("pip install -r ~/.ansible/"), lines
    home, checkout = tmp_path / "home", tmp_path / "checkout"
    home.mkdir()
    checkout.mkdir()
    environment = clean_environment(HOME=str(home), PATH=f"{BIN}:/usr/bin:/bin")
    install_collection(checkout, environment)  # the tarball `build` writes, in the "checkout"
    for name in ("ansible.cfg", "galaxy.yml"):
        shutil.copy(REPO_ROOT / name, checkout / name)
    shutil.copytree(REPO_ROOT / ".collections", checkout / ".collections", symlinks=True)
    completed = subprocess.run(["sh", "-c", install], cwd=checkout, env=environment, capture_output=True, text=True,
                               check=False)
    assert completed.returncode == 0 and "was installed successfully" in completed.stdout, completed.stdout + completed.stderr
    requirements = pip.split("-r ", 1)[1].replace("~", str(home), 1)
    assert Path(requirements).is_file(), requirements
