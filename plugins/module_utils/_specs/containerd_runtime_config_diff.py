# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The argument spec of containerd_runtime_config_diff, used by its action plugin."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def get_containerd_runtime_config_diff_argument_spec():
    return {
        "argument_spec": dict(
            file_diffs=dict(type="list", elements="dict", default=[]),
        ),
        "supports_check_mode": True,
    }
