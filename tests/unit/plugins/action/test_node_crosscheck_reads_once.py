"""node_crosscheck from the node's evidence to its verdict: the root config is read once on the node, sent once, and
parsed once on the controller; the dump is parsed once; the NodeFacts goes to the verdict as it is.

A real run in one process: the real action plugin (ansible-core's ActionBase, the task's own arguments) whose
``_execute_module`` runs the real containerd_facts node module (its ``main``, the result through JSON as over a
connection) on a demo node's tree (inventory/demo/nodes/<host>/: its files as host_root, its committed dump, real
containerd 1.6.20 output). The one read function (``_node/gather.read_text_file``) and the one TOML parser
(``tomllib.loads``) are wrapped wherever the collection holds them, and their calls counted.
"""
import io
import json
import sys
import tomllib
from contextlib import redirect_stdout
from unittest import mock

import pytest
from ansible.module_utils import basic
from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext
from ansible.playbook.task import Task
from ansible.template import Templar
from support.paths import REPO_ROOT

from ansible_collections.gpufleet.runtime_gate.plugins.action.node_crosscheck import ActionModule
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node import gather as node_gather
from ansible_collections.gpufleet.runtime_gate.plugins.modules import containerd_facts as node_module

DEMO = REPO_ROOT / "inventory" / "demo"
ROOT = "etc/containerd/config.toml"
RUNTIMECLASSES = [{"name": name, "handler": name, "node_selector": None} for name in ("nvidia", "nvidia-cdi")]
# (host, the verdict's lines, what explains them): a glob that misses the drop-in; a drop-in the root imports.
NODES = {
    "gpu-node-02": (["MISSING=nvidia", "MISSING=nvidia-cdi"], {"nvidia": ["DROPIN_NOT_IMPORTED", "IMPORT_GLOB_MATCHES_NOTHING"],
                                                               "nvidia-cdi": ["DROPIN_NOT_IMPORTED", "IMPORT_GLOB_MATCHES_NOTHING"]}),
    "gpu-node-03": (["MISSING=nvidia-cdi"], {"nvidia-cdi": ["NOT_CONFIGURED_ANYWHERE"]}),
}


class StoredHostvars(dict):
    """What the action reads of ansible-core's HostVars: ``in`` and ``raw_get`` (a host's variables as stored)."""

    def raw_get(self, host):
        return self[host]


def run_node_module(module_args):
    """The containerd_facts node module's ``main`` on ``module_args``, its result through JSON as Ansible carries it."""
    output = io.StringIO()
    arguments = json.dumps({"ANSIBLE_MODULE_ARGS": module_args}).encode()
    with mock.patch.multiple(basic, _ANSIBLE_ARGS=arguments, _ANSIBLE_PROFILE="legacy", _PARSED_MODULE_ARGS=None), \
            redirect_stdout(output), pytest.raises(SystemExit):
        node_module.main()
    return json.loads(output.getvalue())


def counted(monkeypatch, owner, name, calls):
    """Wrap ``owner.<name>`` in every collection module that holds it (and in ``owner``); each call's first argument is
    appended to ``calls``."""
    original = getattr(owner, name)

    def wrapper(first, *args, **kwargs):
        calls.append(first)
        return original(first, *args, **kwargs)

    monkeypatch.setattr(owner, name, wrapper)
    for module in list(sys.modules.values()):
        if module is not None and module.__name__.startswith("ansible_collections.") and getattr(module, name, None) is original:
            monkeypatch.setattr(module, name, wrapper)


@pytest.fixture(scope="module", params=sorted(NODES))
def judged(request):
    """One run of the action per demo node: ``(host, result, reads, parses, [what the node module sent])``."""
    host = request.param
    node = DEMO / "nodes" / host
    task = Task()
    task.args = {"host_root": str(node), "dump_file": str(node / "config-dump.toml"), "ask_daemon": False,
                 "runtimeclasses": RUNTIMECLASSES, "node_labels": {}, "fail_on_verdict": False}
    loader = DataLoader()
    action = ActionModule(task, mock.Mock(transport="ssh"), PlayContext(), loader, Templar(loader=loader), None)
    sent = []

    def execute_module(module_name, module_args, task_vars):
        assert module_name == "gpufleet.runtime_gate.containerd_facts"
        result = run_node_module(module_args)
        sent.append(json.dumps(result))
        return result

    action._execute_module = execute_module
    reads, parses = [], []
    with pytest.MonkeyPatch.context() as monkeypatch:
        counted(monkeypatch, node_gather, "read_text_file", reads)
        counted(monkeypatch, tomllib, "loads", parses)
        result = action.run(task_vars={"inventory_hostname": host, "hostvars": StoredHostvars(localhost={})})
    return host, result, reads, parses, sent


def test_the_verdict_is_the_nodes(judged):
    host, result, _reads, _parses, _sent = judged
    lines, explained = NODES[host]
    assert (result["lines"], result["missing_explained"]) == (lines, explained), result
    assert result["status"] == "MISSING" and result["loaded_source"] == "dump" and result["files_examined"], result


def test_the_root_config_is_read_once_and_sent_once(judged):
    host, _result, reads, _parses, (sent,) = judged
    root = DEMO / "nodes" / host / ROOT
    assert reads.count(str(root)) == 1, reads
    assert sent.count(json.dumps(root.read_text(encoding="utf-8"))[1:-1]) == 1


def test_the_root_config_and_the_dump_are_parsed_once(judged):
    host, _result, _reads, parses, _sent = judged
    node = DEMO / "nodes" / host
    root, dump = (node / ROOT).read_text(encoding="utf-8"), (node / "config-dump.toml").read_text(encoding="utf-8")
    assert (parses.count(root), parses.count(dump)) == (1, 1), [text[:60] for text in parses]
    # Nothing is parsed twice: each drop-in the node sent as well.
    assert len(parses) == len(set(parses)), [text[:60] for text in parses]
