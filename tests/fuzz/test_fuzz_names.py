"""Names with every control character (issue 22 items 5 and 6): refused where cluster data enters, and harmless in
every output even when they reach it by another way (a slice report, a node's file names).

- a RuntimeClass handler, a RuntimeClass name, a Node name and a Node's status.runtimeHandlers name holding any C0/C1 control, DEL, a line separator or a
  non-character are refused by the reader, from a manifest file and from API items alike, naming the field and rule;
- bin/rc-crosscheck given such a manifest exits 2 with nothing on stdout and no raw control character on stderr;
- junit.xml, report.html, metrics.prom and report.json of verdicts holding them parse with strict parsers and carry
  no raw control character; the CLI's escaping leaves no forged line.
"""
import json
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.manifest import parse_manifest_text
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.objects import normalise_cluster_objects
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._printable import printable, printable_lines
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.report import build_report, junit_xml
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.report_html import render_html
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.report_metrics import render_metrics
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.summary import collect_verdicts, fleet_view
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict import judge_and_explain
from support.containerd_trees import dumped
from support.paths import REPO_ROOT

CONTROLS = [chr(code) for code in [*range(0x20), *range(0x7F, 0xA0)]] + ["\u2028", "\u2029", "\u202e", "\ufffe", "\uffff"]
RAW = set(CONTROLS) - {"\n"}


def names_holding(char):
    return [f"x{char}OK", f"{char}\x1b[2K\r\x1b[32mOK\x1b[0m", f"nvidia{char}"]


def _strict_xml(text):
    ET.fromstring(text.encode("utf-8"))  # expat: any character XML 1.0 forbids is an error


@pytest.mark.parametrize("char", CONTROLS, ids=[f"U+{ord(char):04X}" for char in CONTROLS])
def test_a_name_with_a_control_character_is_refused_where_cluster_data_enters(char):
    for name in names_holding(char):
        runtimeclass = {"metadata": {"name": "rc"}, "handler": name}
        with pytest.raises(RuntimeGateError, match=r"RuntimeClass 'rc': handler .* is not a DNS-1123 label"):
            normalise_cluster_objects([runtimeclass], [], "the API server https://x")
        for kind, objects in (("RuntimeClass", ([{"metadata": {"name": name}, "handler": "h"}], [])),
                              ("Node", ([], [{"metadata": {"name": name}}]))):
            with pytest.raises(RuntimeGateError, match=rf"a {kind}: metadata.name .* is not a DNS-1123 subdomain") as raised:
                normalise_cluster_objects(*objects, "the API server https://x")
            assert not RAW & set(str(raised.value)), str(raised.value)
        node = {"metadata": {"name": "gpu-1"}, "status": {"runtimeHandlers": [{"name": ""}, {"name": name}]}}
        with pytest.raises(RuntimeGateError, match=r"Node 'gpu-1': status.runtimeHandlers name .* is not a DNS-1123 label") as raised:
            normalise_cluster_objects([], [node], "the API server https://x")
        assert not RAW & set(str(raised.value)), str(raised.value)
    manifest = json.dumps({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "rc"},
                           "handler": f"x{char}OK"})
    with pytest.raises(RuntimeGateError, match="is not a DNS-1123 label"):
        parse_manifest_text(manifest, "manifest file 'hostile.json'")


@pytest.mark.components
def test_the_cli_refuses_a_hostile_manifest_with_exit_2_and_escapes_its_message(tmp_path):
    manifest = tmp_path / "classes.json"
    manifest.write_text(json.dumps({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "rc"},
                                    "handler": "x\nOK\x1b]0;owned\x07"}))
    dump = dumped("S6-v2", "1.7", tmp_path)  # what the real containerd 1.7 prints
    completed = subprocess.run([str(REPO_ROOT / "bin" / "rc-crosscheck"), "--runtimeclasses", str(manifest), str(dump.path)],
                               capture_output=True, text=True, check=False, cwd="/")
    assert (completed.returncode, completed.stdout) == (2, ""), completed.stderr
    assert "handler 'x\\nOK\\x1b]0;owned\\x07' is not a DNS-1123 label" in completed.stderr
    assert len(completed.stderr.splitlines()) == 1 and not RAW & set(completed.stderr)


def hostile_report(name):
    """A report whose host name, handler and finding texts hold ``name`` (as a slice or a node's files could)."""
    runtimeclasses = [{"name": "rc", "handler": name, "node_selector": None, "overhead": None, "scheduling": None}]
    verdict = judge_and_explain({"runtimes": {"runc": {"runtime_type": "io.containerd.runc.v2"}},
                                 "default_runtime_name": "runc"}, runtimeclasses, node_name=name, node_labels={})
    verdicts = collect_verdicts({f"host{name}": verdict})
    fleet = fleet_view(verdicts, {"runtimeclasses": runtimeclasses, "nodes": [], "source": {"type": "file", "path": name}})
    return build_report(verdicts, fleet, generated_at="2026-12-03T00:00:00Z")


@pytest.mark.parametrize("char", CONTROLS, ids=[f"U+{ord(char):04X}" for char in CONTROLS])
def test_every_output_escapes_a_control_character_on_its_own(char):
    for name in names_holding(char):
        report = hostile_report(name)
        junit = junit_xml(report)
        _strict_xml(junit)
        for text in (junit, render_html(report), render_metrics(report)):
            assert not RAW & set(text), [c for c in text if c in RAW]
        parser = HTMLParser()
        parser.feed(render_html(report))
        assert not RAW & set(json.dumps(report))
        for line in report["hosts"][f"host{name}"]["lines"]:
            assert printable(line) != "OK" and "\n" not in printable(line)
        assert not RAW & set(printable_lines("\n".join(report["hosts"][f"host{name}"]["lines"])))
