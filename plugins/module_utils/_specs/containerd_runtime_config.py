# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The argument spec of containerd_runtime_config, used by the module and its action plugin."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def get_containerd_runtime_config_argument_spec():
    return {
        "argument_spec": dict(
            runtimes=dict(
                type="list",
                elements="dict",
                default=[],
                options=dict(
                    name=dict(type="str", required=True),
                    # kubespray's containerd_additional_runtimes entries name these type, engine and root.
                    runtime_type=dict(type="str", aliases=["type"]),
                    runtime_engine=dict(type="str", aliases=["engine"]),
                    runtime_root=dict(type="str", aliases=["root"]),
                    base_runtime_spec=dict(type="str"),
                    binary_name=dict(type="str"),
                    options=dict(type="dict", default={}),
                ),
            ),
            presets=dict(type="list", elements="str", default=[], choices=["nvidia"]),
            nvidia_binary_dir=dict(type="str", default="/usr/bin"),
            enable_cdi=dict(type="bool"),
            dropin_dir=dict(type="str", default="/etc/containerd/conf.d"),
            dropin_name=dict(type="str", default=""),
            import_pattern=dict(type="str"),
            backup_dir=dict(type="str", default=""),
            manage_root_config=dict(type="bool", default=False),
            root_settings=dict(type="dict", default={}),
            default_runtime=dict(type="str"),
            allow_default_change=dict(type="bool", default=False),
            containerd_bin=dict(type="str", default="containerd"),
            config_path=dict(type="str", default="/etc/containerd/config.toml"),
            timeout=dict(type="int", default=60),
            socket=dict(type="str", default=""),
            ask_daemon=dict(type="bool", default=True),
            wait_command=dict(type="list", elements="str", default=[]),
            accept_pending_edits=dict(type="list", elements="str", default=[]),
        ),
        "supports_check_mode": True,
    }
