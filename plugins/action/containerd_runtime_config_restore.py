# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Decides, on the controller, which files the containerd_runtimes role restores or deletes (``_render.restore_plan``),
which directories it removes again, and the rollback's message (``_change/rollback``)."""

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.rollback import rollback_message
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.render import restore_plan
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.containerd_runtime_config_restore import (
    get_containerd_runtime_config_restore_argument_spec,
)


def _created_dirs(created):
    results = created.get("results") if isinstance(created, dict) else None
    return [result["item"]["path"] for result in (results if isinstance(results, list) else ())
            if isinstance(result, dict) and result.get("changed") and isinstance(result.get("item"), dict)
            and result["item"].get("remove_on_rollback")]


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        spec = get_containerd_runtime_config_restore_argument_spec()
        _validation, args = self.validate_argument_spec(argument_spec=spec["argument_spec"])
        decided = {**restore_plan(args["written"], args["failed_result"]),
                   "remove_dirs": sorted(_created_dirs(args["created_dirs"]), reverse=True)}
        rollback = args["rollback"]
        if rollback is not None:
            decided["rollback_msg"] = rollback_message(
                rollback.get("host") or (task_vars or {}).get("inventory_hostname", "?"),
                failed_task=rollback.get("failed_task"), failed_result=rollback.get("failed_result"),
                restart_result=rollback.get("restart_result"), wait_result=rollback.get("wait_result"))
        return {**result, "changed": False, **decided}
