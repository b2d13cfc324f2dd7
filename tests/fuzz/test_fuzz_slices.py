"""Slices (issue 22 item 2): report_merge's verifier against every way one host's entry can be altered.

Each case starts from a slice the real core wrote (judge, collect_verdicts, fleet_view, build_report), changes one
field of one host to any value of any type, and reads it back. Whatever the change, the slice is either refused with one
message naming the file, or it still says what its evidence says: never a host whose status disagrees with its own
required/loaded handlers. The stdlib validator agrees with the jsonschema library on docs/report.schema.json.
"""
import json
from datetime import UTC, datetime

import jsonschema
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.merge import read_slice_report, recomputed_status, slices_run_id
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.report import build_report
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.report_schema import (
    SCHEMA_PATH,
    load_report_schema,
    schema_errors,
)
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.summary import collect_verdicts, fleet_view
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict import judge_and_explain
from fuzz.fuzzing import fuzz_settings

RUNTIMECLASSES = [{"name": "nvidia", "handler": "nvidia", "node_selector": None, "overhead": None, "scheduling": None}]
NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
HOST_FIELDS = ["status", "lines", "missing_handlers", "required_handlers", "loaded_runtimes", "reason", "node"]
VALUES = st.one_of(st.sampled_from(["OK", "MISSING", "UNKNOWN", ["OK"], [], ["nvidia"], ["runc", "nvidia"],
                                    ["MISSING=nvidia"], ["UNKNOWN=x"], None, "", 0, True]),
                   st.lists(st.sampled_from(["OK", "nvidia", "runc", "MISSING=nvidia", "UNKNOWN=r"]), max_size=3),
                   st.text(max_size=5))
SCHEMA = load_report_schema()


def real_slice():
    judged = {host: judge_and_explain({"runtimes": {name: {"runtime_type": "io.containerd.runc.v2"} for name in loaded},
                                       "default_runtime_name": "runc"}, RUNTIMECLASSES, node_name=host, node_labels={})
              for host, loaded in {"ok-1": ["runc", "nvidia"], "missing-1": ["runc"]}.items()}
    verdicts = collect_verdicts(judged)
    fleet = fleet_view(verdicts, {"runtimeclasses": RUNTIMECLASSES, "nodes": [], "source": {"type": "file", "path": "/c"}})
    return build_report(verdicts, fleet, generated_at="2026-12-03T11:00:00Z")


@fuzz_settings(300)
@given(host=st.sampled_from(["ok-1", "missing-1"]), field=st.sampled_from(HOST_FIELDS), value=VALUES)
def test_an_altered_host_is_refused_or_still_says_what_its_evidence_says(tmp_path_factory, host, field, value):
    report = real_slice()
    report["hosts"][host][field] = value
    path = tmp_path_factory.mktemp("slice") / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    try:
        read = read_slice_report(str(path), now=NOW, schema=SCHEMA)
    except RuntimeGateError as error:
        assert str(error).startswith(f"slice report '{path}'") and "\n" not in str(error)
        return
    for entry in read["hosts"].values():
        assert entry["status"] == recomputed_status(entry)
        missing = set(entry["required_handlers"]) - set(entry["loaded_runtimes"])
        assert entry["status"] != "OK" or not missing


@fuzz_settings(200)
@given(host=st.sampled_from(["ok-1", "missing-1"]), field=st.sampled_from(HOST_FIELDS + ["findings", "notes", "extra"]),
       value=VALUES)
def test_the_stdlib_validator_agrees_with_jsonschema(host, field, value):
    report = real_slice()
    report["hosts"][host][field] = value
    reference = jsonschema.Draft202012Validator(json.loads(open(SCHEMA_PATH, encoding="utf-8").read()))
    assert bool(schema_errors(report, SCHEMA)) == (not reference.is_valid(report))


RUN_IDS = st.one_of(st.text(max_size=140), st.sampled_from(["nightly-1", "nightly-1\n", "-x", "a" * 128, "a" * 129]),
                    st.none(), st.integers())


@fuzz_settings(200)
@given(run_id=RUN_IDS)
def test_a_slice_is_of_the_named_run_or_refused_and_the_validator_agrees_on_run_ids(tmp_path_factory, run_id):
    """Any run_id a file may hold: the stdlib validator and jsonschema agree, and a slice merged under the run
    'nightly-1' holds exactly that id; anything else is refused with one message naming the file."""
    report = real_slice()
    report["run_id"] = run_id
    reference = jsonschema.Draft202012Validator(json.loads(open(SCHEMA_PATH, encoding="utf-8").read()))
    if isinstance(run_id, str) and run_id.endswith("\n"):
        # The jsonschema library reads "$" as Python's re does (it also matches before a final newline); JSON Schema
        # patterns are ECMA-262, where it does not: the stdlib validator follows the standard and refuses it.
        assert schema_errors(report, SCHEMA)
    else:
        assert bool(schema_errors(report, SCHEMA)) == (not reference.is_valid(report))
    path = tmp_path_factory.mktemp("slice") / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    try:
        read = read_slice_report(str(path), now=NOW, schema=SCHEMA)
        assert slices_run_id({str(path): read}, "nightly-1") == "nightly-1"
    except RuntimeGateError as error:
        assert str(error).startswith(f"slice report '{path}'") and "\n" not in str(error)
        return
    assert read["run_id"] == "nightly-1"
