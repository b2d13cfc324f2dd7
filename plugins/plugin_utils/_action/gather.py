# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""One host's containerd facts, for an action plugin: the stdlib node module runs once, its evidence is parsed
here on the controller once, into one ``NodeFacts`` (``NodeFacts.from_evidence``). node_crosscheck judges that object;
containerd_facts returns its ``facts`` as ``ansible_facts.containerd``."""

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.node_facts import NodeFacts
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.controller_paths import resolve_args, runs_on_controller
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.containerd_facts import containerd_facts_options

NODE_MODULE = "gpufleet.runtime_gate.containerd_facts"
NODE_OPTIONS = tuple(containerd_facts_options())


def gather_node_facts(action, task_vars, node_args):
    """``(NodeFacts, None)`` for this host, or ``(None, failed result)`` whose ``msg`` names the host (the node module's
    own failure, or evidence that is no usable dump). Connection failures propagate (the caller decides what an
    unreachable host is)."""
    node = (task_vars or {}).get("inventory_hostname", "?")
    module_args = {name: value for name, value in node_args.items() if name in NODE_OPTIONS}
    if runs_on_controller(action._connection):
        # The node is the controller: a relative dump file, node root or wrapper is relative to where
        # ansible-playbook runs, not to the playbook's directory where the module runs (_controller_paths).
        # config_path, dropin_dirs and cdi_spec_dirs are node paths under host_root: left alone.
        module_args = resolve_args(module_args, path_args=("dump_file", "host_root", "socket"),
                                   program_args=("containerd_bin", "crictl_bin"))
    module_result = action._execute_module(module_name=NODE_MODULE, module_args=module_args, task_vars=task_vars)
    if module_result.get("failed"):
        module_result["msg"] = f"{node}: {module_result.get('msg', 'containerd facts could not be gathered')}"
        module_result.pop("evidence", None)
        # The module failed on purpose with a sentence; ansible-core's "(traceback unavailable)" adds nothing.
        module_result.pop("exception", None)
        return None, module_result
    try:
        return NodeFacts.from_evidence(module_result["evidence"]), None
    except RuntimeGateError as error:
        return None, {"failed": True, "changed": False, "msg": f"{node}: {error}"}


def gather_containerd_facts(action, task_vars, node_args):
    """What the ``containerd_facts`` task returns for this host: ``{"ansible_facts": {"containerd": facts}}`` (a result
    that travels between tasks) or the failed result of ``gather_node_facts``."""
    gathered, failed = gather_node_facts(action, task_vars, node_args)
    return failed or {"changed": False, "ansible_facts": {"containerd": gathered.facts}}
