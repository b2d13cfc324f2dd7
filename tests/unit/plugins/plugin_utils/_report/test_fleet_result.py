"""``fleet_result`` is the one result of crosscheck_summary and report_merge, so their RETURN blocks document it alike.

ansible-core 2.19 merges doc fragments into DOCUMENTATION only (``ansible.utils.plugin_docs.get_docstring`` calls
``add_fragments`` on the ``doc`` part, never on ``returndocs``), so a fragment cannot hold the shared RETURN keys.
Instead: every key ``fleet_result`` returns is documented in both modules with the type its value has; the shared keys
have the same type in both; and where report_merge points at crosscheck_summary's description (``RV(...)``) instead
of repeating it, that is a key crosscheck_summary documents, the same key. (The real runs' keys against RETURN:
tests/unit/plugins/modules/test_contract.py.)
"""
import re

import pytest
from ansible.parsing.plugin_docs import read_docstring

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.fleet_result import fleet_result
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.report import write_reports
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.summary import collect_verdicts, fleet_view
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict import judge_and_explain, unknown
from support.paths import REPO_ROOT

MODULES = ("crosscheck_summary", "report_merge")
# ansible-core's own keys, documented by no module.
ANSIBLE_KEYS = {"changed"}
TYPES = {"dict": dict, "list": list, "bool": bool, "str": str, "int": int}
CLUSTER = {
    "runtimeclasses": [{"name": "nvidia", "handler": "nvidia", "overhead_pod_fixed": None, "node_selector": None,
                        "tolerations": []}],
    "nodes": [], "pods": [], "source": {"type": "file", "path": "/srv/cluster.yaml"}, "api_requests": 0,
}
SHARED_REFERENCE = re.compile(r"RV\(gpufleet\.runtime_gate\.crosscheck_summary#module:([a-z_]+)\)")


def return_docs(module):
    return read_docstring(str(REPO_ROOT / "plugins" / "modules" / f"{module}.py"))["returndocs"]


def fleet_results(tmp_path):
    """fleet_result without reports and, once the reports were written (twice: the second with a previous report),
    with them."""
    facts = {"default_runtime_name": "runc", "runtimes": {"runc": {}, "nvidia": {}}, "containerd_version": "2.2.1"}
    verdicts = collect_verdicts({
        "ok-node": judge_and_explain(facts, CLUSTER["runtimeclasses"], node_name="ok-node", node_labels={}),
        "gone-node": unknown("gone-node", "host unreachable while gathering containerd facts: ssh refused")})
    fleet = fleet_view(verdicts, CLUSTER)
    results = [fleet_result(verdicts, fleet), fleet_result(verdicts, fleet, verdicts_file_written=True)]
    for _run in range(2):
        report, paths = write_reports(tmp_path, verdicts, fleet, generated_at="2026-12-03T10:00:00Z", run_id="r-1")
        results.append(fleet_result(verdicts, fleet, report=report, report_paths=paths))
    return results


@pytest.mark.parametrize("module", MODULES)
def test_every_key_of_the_fleet_result_is_documented_with_its_type(module, tmp_path):
    documented = return_docs(module)
    for result in fleet_results(tmp_path):
        assert sorted(set(result) - ANSIBLE_KEYS - set(documented)) == [], f"{module}'s RETURN leaves out keys"
        for key, value in result.items():
            if key in ANSIBLE_KEYS or value is None:
                continue
            entry = documented[key]
            assert isinstance(value, TYPES[entry["type"]]), (module, key, entry["type"], value)
            if entry["type"] == "list":
                assert all(isinstance(item, TYPES[entry["elements"]]) for item in value), (module, key, value)


def test_the_two_modules_document_the_shared_keys_alike(tmp_path):
    summary, merge = (return_docs(module) for module in MODULES)
    shared = set().union(*fleet_results(tmp_path)) - ANSIBLE_KEYS
    for key in sorted(shared):
        assert (summary[key]["type"], summary[key].get("elements")) == (merge[key]["type"], merge[key].get("elements")), key
    referred = {key: SHARED_REFERENCE.findall(str(entry["description"])) for key, entry in merge.items()}
    referred = {key: names for key, names in referred.items() if names}
    # The keys whose description report_merge does not repeat: each one points at the same key of crosscheck_summary.
    assert referred == {"verdict_sources": ["verdict_sources"], "runtimeclasses": ["runtimeclasses"]}, referred
    assert all(key in summary and key in shared for key in referred), referred
