"""Every module's DOCUMENTATION says what its one argument spec accepts, and its RETURN what it really returns.

- options: for each file in plugins/modules/, the options ``ansible-doc`` shows (doc fragments merged) against
  ``get_<module>_argument_spec()`` of ``plugins/module_utils/_specs/<module>.py``: names, types, defaults, choices,
  required, elements, aliases and suboptions; every option named like a secret is ``no_log``; check mode support as
  the ``check_mode`` attribute says. A module without a spec file fails.
- RETURN: real results (``support.module_results``: one real run of each module) carry only documented top-level keys,
  and every key documented ``returned: always`` is there.
"""
import importlib
import importlib.util
import json
import subprocess

import pytest
import yaml
from support.paths import REPO_ROOT

MODULES = sorted(path.stem for path in (REPO_ROOT / "plugins" / "modules").glob("*.py") if path.stem != "__init__")
SPEC_PACKAGE = "ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs"
# Option names that carry credentials (kubernetes.core's api_key; a proxy URL may hold user:password).
SECRET_OPTIONS = {"api_key", "password", "token", "proxy", "client_key_data"}
# Keys ansible-core itself puts in results (or renders, as diff), which no module documents.
COMMON_RESULT_KEYS = {"changed", "failed", "invocation", "warnings", "deprecations", "exception", "diff"}


@pytest.fixture(scope="module")
def docs():
    """Each module's documentation as ansible-doc renders it (doc fragments merged)."""
    completed = subprocess.run(
        [str(REPO_ROOT / ".venv" / "bin" / "ansible-doc"), "--json", "-t", "module",
         *(f"gpufleet.runtime_gate.{module}" for module in MODULES)],
        cwd=REPO_ROOT, capture_output=True, text=True, check=False, timeout=300)
    assert completed.returncode == 0, completed.stderr[-4000:]
    rendered = json.loads(completed.stdout)
    return {name.rsplit(".", 1)[-1]: entry for name, entry in rendered.items()}


def argument_spec_of(module):
    """``get_<module>_argument_spec()``; fails the test (not skips it) when the module has none."""
    if importlib.util.find_spec(f"{SPEC_PACKAGE}.{module}") is None:
        pytest.fail(f"plugins/modules/{module}.py has no argument spec: plugins/module_utils/_specs/{module}.py is missing",
                    pytrace=False)
    specs = importlib.import_module(f"{SPEC_PACKAGE}.{module}")
    getter = getattr(specs, f"get_{module}_argument_spec", None)
    assert getter is not None, f"_specs/{module}.py defines no get_{module}_argument_spec()"
    return getter()


def documented_shape(options):
    """Option name -> what a spec says about it, from DOCUMENTATION ``options``/``suboptions``."""
    shape = {}
    for name, option in (options or {}).items():
        shape[name] = {
            "type": option.get("type", "str"),
            "default": option.get("default"),
            "choices": option.get("choices"),
            "required": option.get("required", False),
            "elements": option.get("elements"),
            "aliases": sorted(option.get("aliases") or []),
            "options": documented_shape(option["suboptions"]) if option.get("suboptions") else None,
        }
    return shape


def spec_shape(argument_spec):
    shape = {}
    for name, option in argument_spec.items():
        shape[name] = {
            "type": option.get("type", "str"),
            "default": option.get("default"),
            "choices": option.get("choices"),
            "required": option.get("required", False),
            "elements": option.get("elements"),
            "aliases": sorted(option.get("aliases") or []),
            "options": spec_shape(option["options"]) if option.get("options") else None,
        }
    return shape


def differences(documented, specified, path=""):
    found = []
    for name in sorted(set(documented) | set(specified)):
        where = f"{path}{name}"
        if name not in specified:
            found.append(f"{where}: documented, not in the argument spec")
        elif name not in documented:
            found.append(f"{where}: in the argument spec, not documented")
        else:
            for field in ("type", "default", "choices", "required", "elements", "aliases"):
                if documented[name][field] != specified[name][field]:
                    found.append(f"{where}.{field}: documented {documented[name][field]!r}, "
                                 f"argument spec {specified[name][field]!r}")
            found += differences(documented[name]["options"] or {}, specified[name]["options"] or {}, f"{where}.")
    return found


def secret_options_without_no_log(argument_spec, path=""):
    missing = []
    for name, option in argument_spec.items():
        if name in SECRET_OPTIONS and not option.get("no_log"):
            missing.append(f"{path}{name}")
        missing += secret_options_without_no_log(option.get("options") or {}, f"{path}{name}.")
    return missing


@pytest.mark.parametrize("module", MODULES)
def test_documented_options_are_the_argument_spec(module, docs):
    spec = argument_spec_of(module)
    doc = docs[module]["doc"]
    assert differences(documented_shape(doc.get("options")), spec_shape(spec["argument_spec"])) == []
    assert secret_options_without_no_log(spec["argument_spec"]) == []
    support = ((doc.get("attributes") or {}).get("check_mode") or {}).get("support")
    assert spec["supports_check_mode"] == (support in ("full", "partial")), \
        f"supports_check_mode is {spec['supports_check_mode']}, the check_mode attribute says {support!r}"
    assert set(spec) <= {"argument_spec", "supports_check_mode", "mutually_exclusive", "required_if",
                         "required_together", "required_one_of", "required_by"}


@pytest.mark.parametrize("module", MODULES)
def test_documentation_uses_the_attributes_fragment(module):
    text = (REPO_ROOT / "plugins" / "modules" / f"{module}.py").read_text(encoding="utf-8")
    documentation = yaml.safe_load(text.split('DOCUMENTATION = r"""', 1)[1].split('"""', 1)[0])
    assert "gpufleet.runtime_gate._attributes" in (documentation.get("extends_documentation_fragment") or [])


def test_the_comparison_sees_a_wrong_default():
    """The option comparison is not vacuous: a spec that differs from its documentation in one default is found."""
    documented = {"apply": {"type": "bool", "default": False}}
    assert differences(documented_shape(documented), spec_shape({"apply": {"type": "bool", "default": True}})) == [
        "apply.default: documented False, argument spec True"]


@pytest.fixture(scope="module")
def real_results(tmp_path_factory):
    """``{module: [registered results]}`` of one real run of every module (``support.module_results``)."""
    # pylint: disable=import-outside-toplevel  # the cluster support needs the built components only here
    from support.kube_cluster import ClusterNotReady, start_cluster
    from support.module_results import run_every_module
    from support.tools import require_command

    containerd_bin = require_command("containerd", "containerd")
    workdir = tmp_path_factory.mktemp("module-results")
    try:
        cluster = start_cluster(workdir / "cluster")
    except ClusterNotReady as err:
        pytest.fail(f"the test cluster did not start: {err}", pytrace=False)
    try:
        results, completed = run_every_module(workdir, cluster, containerd_bin)
    finally:
        cluster.stop()
    assert completed.returncode == 0, completed.stdout[-6000:] + completed.stderr[-3000:]
    return results


def documented_returns(doc_entry):
    return doc_entry.get("return") or {}


@pytest.mark.parametrize("module", MODULES)
@pytest.mark.components
def test_real_results_have_only_documented_keys(module, docs, real_results):
    assert real_results.get(module), f"module_results.yml does not run {module}"
    documented = set(documented_returns(docs[module]))
    for result in real_results[module]:
        assert sorted(set(result) - documented - COMMON_RESULT_KEYS) == [], \
            f"{module} returns keys its RETURN does not document"


@pytest.mark.parametrize("module", MODULES)
@pytest.mark.components
def test_keys_documented_always_are_returned(module, docs, real_results):
    always = {key for key, entry in documented_returns(docs[module]).items() if entry.get("returned") == "always"}
    for result in real_results[module]:
        assert sorted(always - set(result)) == [], f"{module} leaves out keys its RETURN says are returned always"
