# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The argument spec of containerd_runtime_config_probe, the node half of the containerd_runtime_config action."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def get_containerd_runtime_config_probe_argument_spec():
    return {
        "argument_spec": dict(
            mode=dict(type="str", choices=["gather", "validate", "daemon"], required=True),
            containerd_bin=dict(type="str", default="containerd"),
            config_path=dict(type="str", default="/etc/containerd/config.toml"),
            patterns=dict(type="list", elements="str", default=[]),
            write_paths=dict(type="list", elements="str", default=[]),
            binaries=dict(type="list", elements="str", default=[]),
            list_dirs=dict(type="list", elements="str", default=[]),
            files=dict(type="dict", default={}),
            copy_files=dict(type="dict", default={}),
            socket=dict(type="str", default="/run/containerd/containerd.sock"),
            timeout=dict(type="int", default=60),
        ),
        "supports_check_mode": True,
    }
