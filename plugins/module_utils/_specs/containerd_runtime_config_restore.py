# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The argument spec of containerd_runtime_config_restore, used by its action plugin."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def get_containerd_runtime_config_restore_argument_spec():
    return {
        "argument_spec": dict(
            written=dict(type="dict", default={}),
            failed_result=dict(type="dict"),
            created_dirs=dict(type="dict", default={}),
            rollback=dict(type="dict"),
        ),
        "supports_check_mode": True,
    }
