# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Collects every judged host's verdict once per run: a table for the terminal and a JSON file."""

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._summary import (
    collect_verdicts,
    summary_table,
    verdict_counts,
    write_verdicts_file,
)

ARGUMENT_SPEC = dict(
    hosts=dict(type="list", elements="str", required=True),
    verdict_var=dict(type="str", default="runtime_gate_verdict"),
    verdicts_file=dict(type="path"),
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        hostvars = task_vars["hostvars"]
        registered = {host: hostvars[host].get(args["verdict_var"]) for host in args["hosts"]}
        verdicts = collect_verdicts(registered)
        if args["verdicts_file"]:
            try:
                write_verdicts_file(args["verdicts_file"], verdicts)
            except RuntimeGateError as error:
                raise AnsibleActionFail(str(error)) from None
        result.update(
            changed=False,
            verdicts=verdicts,
            counts=verdict_counts(verdicts),
            table_lines=summary_table(verdicts),
        )
        return result
