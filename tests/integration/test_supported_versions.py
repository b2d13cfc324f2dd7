"""The ansible-core versions the collection declares are the ones the tests run (issue 14 item 9).

meta/runtime.yml's ``requires_ansible`` is what ansible-galaxy and ansible-core check on install and load; its
lower bound must be the minimum requirements-test.txt pins (the oldest release the tests can run), the ansible-core
running these tests must satisfy it, and the README must name the tested release.
"""
import re
import sys
from importlib.metadata import version

import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from support.paths import REPO_ROOT


def requires_ansible():
    return SpecifierSet(yaml.safe_load((REPO_ROOT / "meta" / "runtime.yml").read_text())["requires_ansible"])


def pinned_ansible_core():
    for line in (REPO_ROOT / "requirements-test.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and Requirement(line).name == "ansible-core":
            return Requirement(line).specifier
    raise AssertionError("requirements-test.txt pins no ansible-core")


def lower_bound(specifiers):
    (bound,) = [Version(spec.version) for spec in specifiers if spec.operator == ">="]
    return bound


def test_the_installed_ansible_core_satisfies_requires_ansible():
    installed = version("ansible-core")
    assert installed in requires_ansible(), (installed, str(requires_ansible()))
    assert installed in pinned_ansible_core(), (installed, str(pinned_ansible_core()))


def test_the_declared_floor_is_the_pinned_minimum():
    assert lower_bound(requires_ansible()) == lower_bound(pinned_ansible_core()), (
        str(requires_ansible()), str(pinned_ansible_core()))


def test_the_pin_admits_the_newest_release_this_python_can_run():
    # ansible-core 2.20 requires Python >= 3.12; on the controller Python 3.11 the newest line is 2.19, which the pin must
    # admit, and on a newer Python a pin that stops at 2.19 would leave the newest release untested.
    pinned = pinned_ansible_core()
    newest_line = "2.19" if sys.version_info < (3, 12) else None
    if newest_line is None:
        assert Version("2.20.0") in pinned or not any(spec.operator == "<" for spec in pinned), str(pinned)
    else:
        assert Version(f"{newest_line}.99") in pinned and Version("2.20.0") not in pinned, str(pinned)


def test_the_readme_names_the_tested_release():
    floor = lower_bound(requires_ansible())
    tested = f"{floor.major}.{floor.minor}"
    readme = (REPO_ROOT / "README.md").read_text()
    requirements = readme.split("## Requirements", 1)[1].split("\n## ", 1)[0]
    assert f"ansible-core {tested}" in requirements, requirements
    assert re.search(rf"tests run ansible-core {re.escape(tested)}\b", requirements), requirements
    declared = yaml.safe_load((REPO_ROOT / "meta" / "runtime.yml").read_text())["requires_ansible"]
    assert f'requires_ansible: "{declared}"' in requirements, requirements


def test_requires_ansible_declares_only_the_tested_releases():
    """No release the tests never run is declared (issue 25 item 7): requires_ansible stops where the pin stops."""
    declared, pinned = requires_ansible(), pinned_ansible_core()
    assert any(spec.operator == "<" for spec in declared), str(declared)
    for candidate in ("2.19.0", "2.19.14", "2.19.99", "2.20.0", "2.21.0", "2.18.9"):
        assert (Version(candidate) in declared) == (Version(candidate) in pinned), (candidate, str(declared), str(pinned))
