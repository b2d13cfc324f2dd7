"""The minimal inputs fuzzing found the parsers mishandling, and the hostile inputs tested once, not per example.

Each regression failed before its fix (a TypeError, a RecursionError, a module result Ansible cannot
encode, a malformed pattern globbed without error); the size caps and non-UTF-8 input are checked where a
user meets them: the real ``containerd_facts`` module run by ``ansible`` and ``read_manifest_file``.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.manifest import (
    MAX_MANIFEST_BYTES,
    parse_manifest_text,
    read_manifest_file,
)
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import (
    facts_from_dump,
    root_config_summary,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.goglob import GlobPatternError, glob
from support.paths import REPO_ROOT

CRI_RUNC = '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
FIFTY_MIB = 50 * 1024 * 1024


def refusal(text):
    with pytest.raises(RuntimeGateError) as refused:
        facts_from_dump(text, source="file", source_name="dump_file 'x.toml'")
    return str(refused.value)


def test_disabled_plugins_holding_a_table_is_refused_not_a_type_error():
    message = refusal('version = 2\ndisabled_plugins = [{id = "io.containerd.grpc.v1.cri"}]\n')
    assert message == "dump_file 'x.toml': disabled_plugins holds a table, expected plugin IDs (strings)"


@pytest.mark.parametrize("text", [
    "version = 2\nx = " + "[" * 5000 + "]" * 5000 + "\n",           # tomllib itself recurses
    "version = 2\nx = " + "{a = " * 2000 + "1" + "}" * 2000 + "\n",  # inline tables
    "version = 2\n" + CRI_RUNC.replace("runc]", "runc.options" + ".k" * 3000 + "]") + "v = 1\n",  # facts would recurse
], ids=["arrays", "inline-tables", "dotted-table-header"])
def test_deeply_nested_dumps_are_refused_not_a_recursion_error(text):
    assert "nests tables or arrays more than 64 levels deep" in refusal(text)


def test_deeply_nested_root_config_is_a_parse_error_not_a_recursion_error():
    summary = root_config_summary("x = " + "[" * 5000 + "]" * 5000, "/etc/containerd/config.toml")
    assert summary["parse_error"] and summary["version"] is None


def test_a_toleration_that_holds_itself_is_refused_not_returned():
    text = yaml.safe_dump({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "gpu"},
                           "handler": "nvidia", "scheduling": {"tolerations": [{"key": "gpu", "effect": "&"}]}})
    text = text.replace("effect: '&'", "effect: &self [*self]")
    # Refused as the alias it is, before the value that holds itself is ever built.
    with pytest.raises(RuntimeGateError, match=r"uses a YAML alias \(\*self at line \d+, column \d+\): aliases are refused"):
        parse_manifest_text(text, "manifest file 'x.yaml'")


@pytest.mark.parametrize("suffix", ["[/]", "\\/?"])
def test_glob_refuses_a_malformed_directory_part_even_in_an_empty_directory(tmp_path, suffix):
    # Go: "<dir>/[/]" is well formed (a class holding '/'), its directory part "<dir>/[" is not.
    with pytest.raises(GlobPatternError):
        glob(f"{tmp_path}/{suffix}")


def sparse_file(path, size):
    with open(path, "wb") as handle:
        handle.truncate(size)
    return path


def test_manifest_of_50_mib_is_refused_naming_file_and_size(tmp_path):
    path = sparse_file(tmp_path / "cluster.yaml", MAX_MANIFEST_BYTES)
    with pytest.raises(RuntimeGateError) as refused:
        read_manifest_file(str(path))
    assert str(refused.value).startswith(f"manifest file '{path}' is 50.0 MB; files of 50 MB or more are refused")


def test_manifest_that_is_not_utf8_is_refused_naming_line_and_byte(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_bytes(b"kind: List\nitems: []\n# caf\xe9\n")
    with pytest.raises(RuntimeGateError, match=r"is not UTF-8 text: byte 0xe9 at line 3"):
        read_manifest_file(str(path))


def test_node_module_refuses_a_50_mib_dump_and_a_non_utf8_dump(tmp_path):
    """One real ``ansible`` ad-hoc run of containerd_facts over two local hosts, one hostile dump each."""
    big = sparse_file(tmp_path / "big-dump.toml", FIFTY_MIB + 1)
    latin1 = tmp_path / "latin1-dump.toml"
    latin1.write_bytes(b'version = 2\n# r\xe9sum\xe9\n')
    inventory = tmp_path / "hosts.yml"
    local = {"ansible_connection": "local", "ansible_python_interpreter": "/usr/bin/python3"}
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {
        "node-big": {**local, "fuzz_dump": str(big)}, "node-latin1": {**local, "fuzz_dump": str(latin1)}}}}))
    environment = {**os.environ, "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
                   "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp")}
    completed = subprocess.run(
        [str(Path(sys.executable).with_name("ansible")), "all", "-i", str(inventory), "--forks", "2",
         "-m", "gpufleet.runtime_gate.containerd_facts", "-a", "dump_file={{ fuzz_dump }}"],
        cwd=REPO_ROOT, env=environment, capture_output=True, text=True, timeout=120, check=False)
    assert completed.returncode == 2, completed.stdout + completed.stderr
    results = ad_hoc_results(completed.stdout)
    assert results["node-big"]["msg"] == (f"node-big: dump_file '{big}' is {FIFTY_MIB + 1} bytes, "
                                          f"larger than the {FIFTY_MIB} byte limit")
    assert results["node-latin1"]["msg"] == f"node-latin1: dump_file '{latin1}' is not UTF-8 text (byte 0xe9 at offset 15)"
    assert "Traceback" not in completed.stdout + completed.stderr


def ad_hoc_results(stdout):
    """``host | FAILED! => {json}`` blocks of the default callback, by host."""
    results = {}
    for block in re.split(r"^(?=\S+ \| [A-Z!]+ => \{$)", stdout, flags=re.MULTILINE):
        head, _arrow, body = block.partition(" => ")
        if body:
            results[head.split(" | ")[0]] = json.JSONDecoder().raw_decode(body)[0]
    return results
