# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Decides, on the controller, which files the containerd_runtimes role restores or deletes (``_render.restore_plan``)."""

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._render import restore_plan

ARGUMENT_SPEC = dict(
    written=dict(type="dict", default={}),
    failed_result=dict(type="dict"),
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        return {**result, "changed": False, **restore_plan(args["written"], args["failed_result"])}
