# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The one argument spec of node_status_verdicts: its action plugin validates with it, the contract test holds the
module's DOCUMENTATION to it."""

# The same values as plugin_utils/_action/verdict_sources (controller side), which module_utils may not import.
VERDICT_SOURCES = ["hybrid", "node-status", "ssh"]
# Seconds (_facts/node_status.DEFAULT_MAX_HEARTBEAT_AGE): the kubelet's 5-minute status report plus two minutes.
DEFAULT_MAX_HEARTBEAT_AGE = 420


def get_node_status_verdicts_argument_spec():
    return {
        "argument_spec": {
            "hosts": {"type": "list", "elements": "str", "required": True},
            "verdict_source": {"type": "str", "default": "hybrid", "choices": VERDICT_SOURCES},
            "max_heartbeat_age": {"type": "int", "default": DEFAULT_MAX_HEARTBEAT_AGE},
            "cluster_result_var": {"type": "str", "default": "runtime_gate_cluster"},
            # node-status mode: runtimeclass_info's options; the action reads the cluster itself, in-process.
            "cluster": {"type": "dict"},
            # node-status mode: every verdict is final here; the run's summary (crosscheck_summary's) and its files.
            "summarise": {"type": "bool", "default": False},
            "summary_verdicts": {"type": "bool", "default": False},
            "verdicts_file": {"type": "path"},
            "report_dir": {"type": "path"},
            "run_id": {"type": "str"},
        },
        "supports_check_mode": True,
    }
