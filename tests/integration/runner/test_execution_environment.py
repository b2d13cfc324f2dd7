"""execution-environment/execution-environment.yml, the EE the nightly job runs in, against the ansible-builder 3.x
definition schema, and through the real ``ansible-builder create`` (which writes the build context, no image).

It is not meta/execution-environment.yml: that file of an installed collection is the collection's own dependency
declaration to ansible-builder (tests/integration/test_collection_packaging.py introspects it).

Schema source, restated: ansible/ansible-builder src/ansible_builder/ee_schema.py ``schema_v3`` and
docs/definition.rst ("Version 3 format"); dependency files are relative to the definition file's
directory (user_definition.py ``get_dep_abs_path``); an image name must carry a tag (``ImageDescription``).
"""
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from packaging.requirements import Requirement
from support.paths import REPO_ROOT

EE_FILE = REPO_ROOT / "execution-environment" / "execution-environment.yml"
BIN = Path(sys.executable).parent
STRING_OR_STRINGS = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
PIP_PACKAGE = {"type": "object", "additionalProperties": False, "required": ["package_pip"],
               "properties": {"package_pip": {"type": "string"}}}
EE_V3_SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["version", "images", "dependencies"],
    "properties": {
        "version": {"const": 3},
        "build_arg_defaults": {"type": "object", "additionalProperties": False, "properties": {
            name: {"type": "string"} for name in
            ("ANSIBLE_GALAXY_CLI_COLLECTION_OPTS", "ANSIBLE_GALAXY_CLI_ROLE_OPTS", "PKGMGR_PRESERVE_CACHE")}},
        "images": {"type": "object", "additionalProperties": False, "required": ["base_image"], "properties": {
            "base_image": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string", "pattern": "^[^:]+(:[0-9]+)?/.+:[^:/]+$"},
                "signature_original_name": {"type": "string"}}}}},
        "dependencies": {"type": "object", "additionalProperties": False, "properties": {
            "python": STRING_OR_STRINGS, "system": STRING_OR_STRINGS,
            "galaxy": {"anyOf": [{"type": "object"}, *STRING_OR_STRINGS["anyOf"]]},
            "python_interpreter": {"type": "object", "additionalProperties": False, "properties": {
                "package_system": {"type": "string"}, "python_path": {"type": "string"}}},
            "ansible_core": PIP_PACKAGE, "ansible_runner": PIP_PACKAGE,
            "exclude": {"type": "object", "additionalProperties": False, "properties": {
                key: {"type": "array", "items": {"type": "string"}} for key in ("python", "system", "all_from_collections")}}}},
        "additional_build_steps": {"type": "object", "additionalProperties": False, "properties": {
            f"{when}_{stage}": STRING_OR_STRINGS for when in ("prepend", "append")
            for stage in ("base", "galaxy", "builder", "final")}},
        "additional_build_files": {"type": "array", "items": {
            "type": "object", "additionalProperties": False, "required": ["src", "dest"],
            "properties": {"src": {"type": "string"}, "dest": {"type": "string"}}}},
        "options": {"type": "object", "additionalProperties": False, "properties": {
            "relax_passwd_permissions": {"type": "boolean"}, "skip_ansible_check": {"type": "boolean"},
            "skip_pip_install": {"type": "boolean"}, "skip_pip_check": {"type": "boolean"},
            "workdir": {"type": ["string", "null"]}, "package_manager_path": {"type": "string"},
            "user": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}},
            "container_init": {"type": "object", "additionalProperties": False, "properties": {
                key: {"type": "string"} for key in ("package_pip", "entrypoint", "cmd")}}}},
    },
}


@pytest.fixture(scope="module")
def definition():
    return yaml.safe_load(EE_FILE.read_text())


def requirement_lines(path):
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return {Requirement(line).name.lower(): Requirement(line) for line in lines if line}


def test_definition_is_ansible_builder_v3(definition):
    jsonschema.validate(definition, EE_V3_SCHEMA)


@pytest.mark.parametrize("broken", [
    {"version": 2}, {"dependancies": {}}, {"images": {"base_image": {"name": "quay.io/centos/centos"}}},
    {"dependencies": {"ansible_core": {"package": "ansible-core"}}}, {"options": {"package_manager": "/usr/bin/dnf"}},
])
def test_the_schema_check_catches_mistakes(definition, broken):
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**definition, **broken}, EE_V3_SCHEMA)


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


def test_ansible_builder_writes_the_build_context(tmp_path):
    completed = subprocess.run([BIN / "ansible-builder", "create", "-f", EE_FILE, "--context", tmp_path / "context"],
                               cwd=tmp_path, capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    build = tmp_path / "context" / "_build"
    assert (build / "requirements.txt").read_text() == (REPO_ROOT / "requirements.txt").read_text()
    assert (build / "bindep.txt").read_text() == (REPO_ROOT / "bindep.txt").read_text()
    containerfile = next((tmp_path / "context").glob("[CD]*file")).read_text()
    assert "ansible-core>=2.19.0,<2.20" in containerfile and "quay.io/centos/centos:stream9" in containerfile
