"""The collection builds, installs offline, and every module's documentation renders.

The installed tarball is what users get: ansible-builder's introspection (what a user's execution environment
installs with the collection) reads its requirements.txt and bindep.txt (it ships no meta/execution-environment.yml),
and must find our runtime libraries only.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from support.installed import install_collection
from support.paths import REPO_ROOT

BIN = Path(sys.executable).parent
MODULES = sorted(path.stem for path in (REPO_ROOT / "plugins" / "modules").glob("*.py"))


def test_every_module_is_documented_and_renders():
    assert {"containerd_facts", "runtimeclass_info", "node_crosscheck", "crosscheck_summary"} <= set(MODULES)
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
    # what runs and what documents it; none of the checkout's tests, tools, benchmarks or build files (galaxy.yml)
    assert {"bin/rc-crosscheck", "meta/runtime.yml", "requirements.txt", "bindep.txt", "README.md", "docs/usage.md",
            "roles/containerd_runtimes/tasks/main.yml", "tests/sanity/ignore-2.19.txt"} <= set(listing)
    developer_only = ("tests/integration", "tests/unit", "tests/fuzz", "tests/support", "tests/fixtures", "tests/conftest.py",
                      "tools", "benchmarks", "Makefile", "pytest.ini", "requirements-test.txt", "ansible.cfg", ".ansible-lint")
    shipped = [name for name in listing if name.rstrip("/") in developer_only or name.startswith(
        tuple(f"{prefix}/" for prefix in developer_only))]
    assert shipped == [], shipped[:20]
    assert [name for name in listing if name.startswith("tests/") and not name.rstrip("/") in ("tests", "tests/sanity")] == [
        "tests/sanity/ignore-2.19.txt"]

    installed = subprocess.run(
        [BIN / "ansible-galaxy", "collection", "install", "--force", str(tarball), "-p", str(tmp_path / "collections")],
        capture_output=True, text=True, check=False,
    )
    assert installed.returncode == 0, installed.stderr
    root = tmp_path / "collections" / "ansible_collections" / "gpufleet" / "runtime_gate"
    assert (root / "plugins" / "action" / "node_crosscheck.py").is_file()

    # the installed copy, not the checkout, serves the FQCN
    doc = subprocess.run(
        [BIN / "ansible-doc", "gpufleet.runtime_gate.containerd_facts"], cwd=tmp_path,
        env={"ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "collections"), "PATH": str(BIN) + ":/usr/bin:/bin", "HOME": str(tmp_path)},
        capture_output=True, text=True, check=False,
    )
    assert doc.returncode == 0, doc.stderr
    assert str(root) in doc.stdout


@pytest.fixture(scope="module")
def installed_collections(tmp_path_factory):
    """A collections directory holding the collection as ansible-galaxy builds and installs it from a tarball."""
    where = tmp_path_factory.mktemp("installed")
    return install_collection(where, {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(where)})


def test_ansible_builder_introspects_the_installed_collection(installed_collections, tmp_path):
    # What `ansible-builder build` does for a user's EE that lists this collection under dependencies.galaxy.
    python_file, system_file = tmp_path / "python.txt", tmp_path / "system.txt"
    completed = subprocess.run(
        [BIN / "ansible-builder", "introspect", "--sanitize", str(installed_collections),
         "--write-pip", str(python_file), "--write-bindep", str(system_file)],
        capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "Traceback" not in completed.stdout + completed.stderr
    python_lines = [line.split("#", 1)[0].strip() for line in python_file.read_text().splitlines()]
    python_names = {Requirement(line).name.lower() for line in python_lines if line}
    # The controller's libraries (PyYAML comes with ansible-core, so --sanitize drops it), and nothing the tests
    # need (pytest, hypothesis, ansible-core pins).
    assert "kubernetes" in python_names and python_names <= {"kubernetes", "pyyaml"}, python_file.read_text()
    assert all("from collection gpufleet.runtime_gate" in line for line in python_file.read_text().splitlines() if line)
    system_lines = system_file.read_text().splitlines()
    assert any(line.startswith("openssh-clients [platform:rpm]") for line in system_lines), system_lines
    assert not any("containerd" in line for line in system_lines)


# Galaxy's category tags (galaxy_ng's TAGS_CATEGORIES / the Galaxy UI's categories).
GALAXY_CATEGORY_TAGS = {"application", "cloud", "database", "eda", "infrastructure", "linux", "monitoring", "networking",
                        "security", "storage", "tools", "windows"}


def test_license_file_is_the_apache_license_galaxy_yml_names(installed_collections):
    galaxy = yaml.safe_load((REPO_ROOT / "galaxy.yml").read_text())
    assert galaxy["license"] == ["Apache-2.0"]
    installed = installed_collections / "ansible_collections" / "gpufleet" / "runtime_gate" / "LICENSE"
    text = installed.read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"], text[:200]
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text and "END OF TERMS AND CONDITIONS" in text
    debian_copy = Path("/usr/share/common-licenses/Apache-2.0")
    if debian_copy.is_file():
        assert " ".join(text.split()) == " ".join(debian_copy.read_text().split())


def test_galaxy_metadata_has_no_placeholder_urls_and_a_category_tag():
    galaxy = yaml.safe_load((REPO_ROOT / "galaxy.yml").read_text())
    for key in ("repository", "documentation", "homepage", "issues"):
        url = galaxy.get(key)
        # Reserved names (RFC 2606/6761) are placeholders: Galaxy would show a dead link.
        assert url is None or not any(part in url for part in (".invalid", "example.", ".example", ".test/")), (key, url)
    assert GALAXY_CATEGORY_TAGS & set(galaxy["tags"]), galaxy["tags"]
    assert all(tag.isascii() and tag.replace("_", "").isalnum() and tag.islower() for tag in galaxy["tags"])


def test_changelog_fragments_pass_antsibull_changelog_lint(tmp_path):
    linted = subprocess.run([BIN / "antsibull-changelog", "lint"], cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    assert (linted.returncode, linted.stdout, linted.stderr) == (0, "", ""), linted
    assert list((REPO_ROOT / "changelogs" / "fragments").glob("*.yml"))
    # The linter does catch a bad fragment (a section antsibull-changelog does not know), so the pass above means something.
    copy = tmp_path / "collection"
    copy.mkdir()
    (copy / "galaxy.yml").write_text((REPO_ROOT / "galaxy.yml").read_text())
    (copy / "changelogs" / "fragments").mkdir(parents=True)
    (copy / "changelogs" / "config.yaml").write_text((REPO_ROOT / "changelogs" / "config.yaml").read_text())
    (copy / "changelogs" / "fragments" / "bad.yml").write_text("fixes:\n  - a section that does not exist\n")
    broken = subprocess.run([BIN / "antsibull-changelog", "lint"], cwd=copy, capture_output=True, text=True, check=False)
    assert broken.returncode != 0 and "bad.yml" in broken.stdout + broken.stderr, broken


def requirement_names(path):
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return {Requirement(line).name.lower() for line in lines if line and not line.startswith("-")}


def test_runtime_requirements_stand_apart_from_test_requirements():
    runtime = requirement_names(REPO_ROOT / "requirements.txt")
    assert runtime == {"kubernetes", "pyyaml"}, runtime  # what a controller (or a user's EE) installs with the collection
    tests_only = requirement_names(REPO_ROOT / "requirements-test.txt")
    assert {"pytest", "hypothesis", "ansible-core"} <= tests_only and not runtime & tests_only


def test_internal_helper_modules_are_not_presented_as_user_modules():
    internal = ("containerd_runtime_config_probe", "containerd_runtime_config_restore")
    completed = subprocess.run([BIN / "ansible-doc", "--json", *[f"gpufleet.runtime_gate.{name}" for name in internal]],
                               cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr
    for name, doc in json.loads(completed.stdout).items():
        assert doc["doc"]["short_description"].startswith("Internal: "), name
        assert "not a module for playbooks" in " ".join(doc["doc"]["description"]), name
    readme = (REPO_ROOT / "README.md").read_text()
    module_table = readme.split("## Modules", 1)[1].split("\n\n", 2)[1]
    assert "containerd_facts" in module_table and not any(name in module_table for name in internal), module_table
