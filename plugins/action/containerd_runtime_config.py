# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Plans a node's containerd runtime files and proves them with the real binary; writes nothing in place.

Round trip 1 (node, stdlib): version, root text, imports expanded with Go Glob, texts, modes, the current dump.
Controller: ``_change/planner`` (what to write and why; the current dump parsed once, ``_change/outcome.current_state``).
Round trip 2 (node, only when a file changes and the daemon is asked): the running daemon's CRI status (the probe's
``mode: daemon``, ``_node/config_tree.ask_daemon``) for ``_change/pending``; the node's files are not read again.
Round trip 3 (node): the candidate tree in a temp dir, the real ``containerd config dump`` of it and the Go Glob of its
imports (``_node/candidate``). Controller: ``_change/proof.prove_candidate``, then ``_change/outcome.proven_result``.
This file only handles the options, calls the node and assembles the result.
The role then writes ``files`` with ``ansible.builtin.copy``. Every text shown (message, plan, diff) has the node's
credential values redacted; only ``files[].content`` carries them, and the role registers this task with no_log.
"""

import time

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.containerd_runtime_config import (
    get_containerd_runtime_config_argument_spec,
)
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.address import grpc_address
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.outcome import current_state, proven_result, redactor, shown_plan
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.planner import (
    change_request,
    plan_change,
    probe_options,
    record_pending_edits,
)
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.proof import candidate_tree, prove_candidate
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.toml_write import TomlWriteError
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.daemon_view import daemon_view

PROBE = "gpufleet.runtime_gate.containerd_runtime_config_probe"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        spec = get_containerd_runtime_config_argument_spec()
        _validation, args = self.validate_argument_spec(argument_spec=spec["argument_spec"])
        node = (task_vars or {}).get("inventory_hostname", "?")
        redact = redactor([])

        def fail(msg, **fields):
            return {**result, **fields, "failed": True, "refused": True, "changed": False, "msg": redact(f"{node}: {msg}")}

        request, refusal = change_request(args)
        if refusal:
            return fail(refusal)
        gathered = self._probe(task_vars, **probe_options(request))
        texts = gathered.get("texts") or {}
        redact = redactor([gathered.get("root_text")] + list(texts.values()))
        if gathered.get("failed"):
            return fail(gathered.get("msg", "reading the containerd config tree failed"))
        current = current_state(gathered, request["containerd_bin"])
        if current.get("error"):
            return fail(current["error"])
        planned = plan_change(request, gathered, current, stamp=time.strftime("%Y%m%dT%H%M%S", time.gmtime())
                              + "%06dZ" % (time.time_ns() // 1000 % 1000000))
        plan, pending = planned.plan, []
        if planned.writes and not plan["errors"]:
            pending = record_pending_edits(planned, self._daemon_view(task_vars, request, current), current["facts"],
                                           accepted=request["accept_pending_edits"])
        if plan["errors"]:
            return fail("\n".join(plan["errors"] + plan["guard_lines"]), plan=shown_plan(plan, redact),
                        guard_lines=plan["guard_lines"], warnings=planned.warnings)

        # Prove the candidate with the real binary before a file in place is touched.
        try:
            tree = candidate_tree(plan, root_path=request["config_path"], root_text=gathered.get("root_text") or "",
                                  dropin_dir=request["dropin_dir"], existing_paths=set(texts))
        except (TomlWriteError, ValueError) as error:
            return fail(f"cannot build the candidate tree: {error}", plan=shown_plan(plan, redact))
        validated = self._probe(task_vars, mode="validate", config_path=tree["config_path"], files=tree["files"],
                                copy_files=tree["copy_files"], patterns=tree["patterns"],
                                containerd_bin=request["containerd_bin"], timeout=request["timeout"])
        if validated.get("failed"):
            return fail(validated.get("msg", "validating the candidate failed"), plan=shown_plan(plan, redact))
        proof = prove_candidate(planned, tree, validated, current, containerd_version=current["version"])
        if proof.refusal:
            guard = {"guard_lines": plan["guard_lines"]} if proof.with_guard_lines else {}
            return fail(proof.refusal, plan=shown_plan(plan, redact), **guard)
        return proven_result(result, node=node, planned=planned, proof=proof, current=current, texts=texts,
                             stats=gathered.get("stats") or {}, redact=redact, pending=pending, socket=request["socket"],
                             wait=request["wait_command"])

    def _daemon_view(self, task_vars, request, current):
        """The running daemon's view (``_facts/daemon_view``) on the socket today's files name, or ``{"reason"}``
        when it was not asked."""
        if not request["ask_daemon"]:
            return {"reason": "not asked (option ask_daemon: false)"}
        answer = self._probe(task_vars, mode="daemon", socket=request["socket"] or grpc_address(current["loaded"]),
                             containerd_bin=request["containerd_bin"], timeout=request["timeout"])
        if answer.get("failed"):
            return {"reason": answer.get("msg") or "the running daemon could not be asked"}
        return daemon_view(answer.get("daemon"))

    def _probe(self, task_vars, **module_args):
        outcome = self._execute_module(module_name=PROBE, module_args=module_args, task_vars=task_vars)
        outcome.pop("exception", None)
        return outcome
