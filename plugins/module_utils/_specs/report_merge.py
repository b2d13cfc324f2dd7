# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The argument spec of report_merge (an action plugin that runs on the controller)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def get_report_merge_argument_spec():
    return {
        "argument_spec": dict(
            reports=dict(type="list", elements="path"),
            slices_dir=dict(type="path"),
            expected_slices=dict(type="int"),
            max_age_hours=dict(type="float", default=24),
            run_id=dict(type="str"),
            cluster_result=dict(type="dict"),
            report_dir=dict(type="path", required=True),
            verdicts_file=dict(type="path"),
        ),
        "supports_check_mode": False,
        "mutually_exclusive": [("reports", "slices_dir")],
        "required_one_of": [("reports", "slices_dir")],
    }
