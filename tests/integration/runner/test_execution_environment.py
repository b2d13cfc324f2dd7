"""execution-environment/execution-environment.yml, the EE the nightly job runs in, checked by ansible-builder itself:
its own definition check (``UserDefinition.validate``: the schema_v3 of ansible_builder/ee_schema.py, dependency files
relative to the definition's directory, an image name with a tag) and the real ``ansible-builder create`` (which
writes the build context, no image). Nothing here restates the schema: a mistake is whatever ansible-builder refuses.

An installed collection's own dependencies are requirements.txt and bindep.txt at its root, where ansible-builder
looks without a meta/execution-environment.yml (tests/integration/test_collection_packaging.py introspects them).
"""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible_builder.user_definition import DefinitionError, UserDefinition
from packaging.requirements import Requirement
from support.paths import REPO_ROOT

EE_FILE = REPO_ROOT / "execution-environment" / "execution-environment.yml"
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def definition():
    return yaml.safe_load(EE_FILE.read_text())


def requirement_lines(path):
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return {Requirement(line).name.lower(): Requirement(line) for line in lines if line}


def check_with_ansible_builder(definition_path):
    UserDefinition(str(definition_path)).validate()


def test_ansible_builder_accepts_the_definition():
    check_with_ansible_builder(EE_FILE)


def _set(document, dotted, value):
    *parents, last = dotted.split(".")
    for key in parents:
        document = document.setdefault(key, {})
    document[last] = value


@pytest.mark.parametrize("dotted, value", [
    ("dependancies", {}),
    ("images.base_image.name", "quay.io/centos/centos"),  # no tag
    ("dependencies.ansible_core", {"package": "ansible-core"}),
    ("options.package_manager", "/usr/bin/dnf"),
    ("dependencies.python", "../requirement.txt"),  # a file that does not exist next to it
])
def test_ansible_builder_refuses_the_definition_with_a_mistake(definition, tmp_path, dotted, value):
    # The same layout as the repository (the definition one directory below the dependency files), so only the
    # mistake differs; the unbroken copy is accepted.
    for name in ("requirements.txt", "bindep.txt"):
        shutil.copy(REPO_ROOT / name, tmp_path / name)
    (tmp_path / "execution-environment").mkdir()
    copy = tmp_path / "execution-environment" / EE_FILE.name
    copy.write_text(yaml.safe_dump(definition))
    check_with_ansible_builder(copy)
    broken = yaml.safe_load(EE_FILE.read_text())
    _set(broken, dotted, value)
    copy.write_text(yaml.safe_dump(broken))
    with pytest.raises(DefinitionError):
        check_with_ansible_builder(copy)


def test_python_requirements_are_the_collections_and_match_the_tested_versions(definition):
    python_file = EE_FILE.parent / definition["dependencies"]["python"]
    assert python_file.is_file(), f"ansible-builder resolves {definition['dependencies']['python']!r} next to {EE_FILE}"
    assert python_file.resolve() == REPO_ROOT / "requirements.txt"
    ee_requirements = requirement_lines(python_file)
    tested = {**requirement_lines(REPO_ROOT / "requirements.txt"), **requirement_lines(REPO_ROOT / "requirements-test.txt")}
    assert {"kubernetes", "pyyaml"} <= set(ee_requirements)
    for name, requirement in ee_requirements.items():
        assert requirement.specifier == tested[name].specifier, f"{name}: EE and requirements.txt disagree"
    for key, name in (("ansible_core", "ansible-core"), ("ansible_runner", "ansible-runner")):
        pinned = Requirement(definition["dependencies"][key]["package_pip"])
        assert pinned.name == name and pinned.specifier == tested[name].specifier


def test_controller_python_and_system_packages(definition):
    # tomllib (controller code) needs Python 3.11; ansible-core 2.19 supports 3.11-3.13.
    interpreter = definition["dependencies"]["python_interpreter"]
    assert interpreter["python_path"].endswith(("python3.11", "python3.12", "python3.13"))
    system_file = EE_FILE.parent / definition["dependencies"]["system"]
    assert system_file.resolve() == REPO_ROOT / "bindep.txt"
    system = [line for line in system_file.read_text().splitlines() if line and not line.startswith("#")]
    # containerd lives on the GPU nodes, which the EE reaches over SSH; it never belongs in the image.
    assert not any("containerd" in line for line in system)
    assert any(line.startswith("openssh-clients") for line in system)


def test_ansible_builder_writes_the_build_context(definition, tmp_path):
    completed = subprocess.run([BIN / "ansible-builder", "create", "-f", EE_FILE, "--context", tmp_path / "context"],
                               cwd=tmp_path, capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    build = tmp_path / "context" / "_build"
    assert (build / "requirements.txt").read_text() == (REPO_ROOT / "requirements.txt").read_text()
    assert (build / "bindep.txt").read_text() == (REPO_ROOT / "bindep.txt").read_text()
    containerfile = next((tmp_path / "context").glob("[CD]*file")).read_text()
    # What the definition pins reaches the image: the base image and ansible-core as the definition names them.
    assert f"ARG EE_BASE_IMAGE=\"{definition['images']['base_image']['name']}\"" in containerfile
    assert definition["dependencies"]["ansible_core"]["package_pip"] in containerfile
