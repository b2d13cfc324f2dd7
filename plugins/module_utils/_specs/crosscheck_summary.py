# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The one argument spec of crosscheck_summary: its action plugin validates with it, the contract test holds the
module's DOCUMENTATION to it."""

DEFAULT_VERDICT_VAR = "runtime_gate_verdict"


def get_crosscheck_summary_argument_spec():
    return {
        "argument_spec": {
            "hosts": {"type": "list", "elements": "str", "required": True},
            "verdict_var": {"type": "str", "default": DEFAULT_VERDICT_VAR},
            "verdicts_file": {"type": "path"},
            "cluster_result": {"type": "dict"},
            # The variable on localhost that holds it, read as stored: a templated cluster_result copies every Pod.
            "cluster_result_var": {"type": "str"},
            "report_dir": {"type": "path"},
            # The run the reports belong to (runtime_gate_run_id); unset: an id of this run alone (_report/run_id.py).
            "run_id": {"type": "str"},
            # rollout.yml: the variable holding a host's role failure, and the one set when its batch started.
            "role_failure_var": {"type": "str"},
            "batch_reached_var": {"type": "str"},
            # localhost's registered node_status_verdicts result: the verdicts of the hosts judged from their Node.
            "node_status_var": {"type": "str"},
            "return_verdicts": {"type": "bool", "default": True},
        },
        "supports_check_mode": True,
        "mutually_exclusive": [("cluster_result", "cluster_result_var")],
    }
