# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""One host's verdict as an action plugin returns it (node_crosscheck): the core judges, this
only shapes the task result."""

from collections.abc import Mapping

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.host_variables import stored_host_variables
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._explain.findings import failure_message
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict import passed


def stored_cluster_result(task_vars, variable, localhost_variables=None):
    """localhost's registered ``runtimeclass_info`` result as stored, or None when it does not exist.

    Not ``hostvars[...][...]``: that templates and copies the whole cluster (every pod) into each host's task and its
    result, O(hosts x cluster) time and memory (benchmarks/README.md). A registered result is data, never a template.
    ``localhost_variables``: localhost's variables as ``stored_host_variables`` returned them, when the caller already
    holds them (each call computes all of localhost's variables: about 2 ms of controller CPU per host's task).
    """
    if localhost_variables is None:
        localhost_variables = stored_host_variables(task_vars, "localhost")
    return localhost_variables.get(variable)


def stored_node_status_verdict(task_vars, variable, host, node_name, localhost_variables=None):
    """The verdict localhost's ``node_status_verdicts`` result (the variable ``variable``, as stored) holds for ``host``,
    or None: no such variable, a failed or skipped result, a host it left to be judged from its node, or a verdict
    about another Node than ``node_name``, the host's own as this task reads it (node_status_verdicts reads only the
    inventory's variables, not host_vars/ or group_vars/ files: a Node name set there is seen here alone, and the host
    is then judged from its node, never from another Node's status). ``localhost_variables``: as for
    ``stored_cluster_result``."""
    if not variable:
        return None
    if localhost_variables is None:
        localhost_variables = stored_host_variables(task_vars, "localhost")
    stored = localhost_variables.get(variable)
    if not isinstance(stored, Mapping) or stored.get("failed") or stored.get("skipped"):
        return None
    verdicts = stored.get("verdicts")
    verdict = verdicts.get(host) if isinstance(verdicts, Mapping) else None
    if not isinstance(verdict, Mapping) or verdict.get("node") != node_name:
        return None
    return verdict


def verdict_result(verdict, fail_on_verdict):
    """A verdict as a task result: the verdict with ``passed`` and ``msg`` (the MISSING/UNKNOWN lines, then the findings
    that explain them); ``failed`` when the verdict is not OK and ``fail_on_verdict``."""
    result = dict(verdict, changed=False, passed=passed(verdict))
    # One line that says what is missing and the codes of the findings that explain it (failure_message): any
    # stdout callback shows it readably; the console callback prints the findings under it (explanation_lines).
    # `lines` stays the bare seed contract.
    result["msg"] = "\n".join(verdict["lines"]) if result["passed"] else failure_message(verdict)
    if fail_on_verdict and not result["passed"]:
        result["failed"] = True
    return result
