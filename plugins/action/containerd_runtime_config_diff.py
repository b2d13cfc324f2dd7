# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Returns the role's proven file changes as Ansible's own diff (``before``/``after`` per file, already redacted by
containerd_runtime_config), so that ``--diff`` prints them like any file task. Touches nothing."""

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.containerd_runtime_config_diff import (
    get_containerd_runtime_config_diff_argument_spec,
)

_KEYS = ("before_header", "after_header", "before", "after")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        spec = get_containerd_runtime_config_diff_argument_spec()
        _validation, args = self.validate_argument_spec(argument_spec=spec["argument_spec"])
        diffs = [{key: str(entry.get(key) or "") for key in _KEYS} for entry in args["file_diffs"]]
        # changed: the callback prints a diff only for a changed result; these files are what the role's copy writes.
        return {**result, "changed": bool(diffs), "diff": diffs}
