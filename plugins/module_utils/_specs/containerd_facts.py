# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The argument spec of containerd_facts: what the node module takes (node_crosscheck takes it too).

Shipped to nodes with the module: standard library only, Python 3.8 syntax.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def containerd_facts_options():
    """The node gathering options, shared by containerd_facts and node_crosscheck."""
    return dict(
        containerd_bin=dict(type="str"),
        config_path=dict(type="path", default="/etc/containerd/config.toml"),
        host_root=dict(type="path"),
        dump_file=dict(type="path"),
        containerd_version=dict(type="str"),
        timeout=dict(type="int", default=60),
        dropin_dirs=dict(type="list", elements="path", default=["/etc/containerd/conf.d"]),
        cdi_spec_dirs=dict(type="list", elements="path", default=["/etc/cdi", "/var/run/cdi"]),
        # Named as the playbook (runtime_gate_ask_daemon) and role (containerd_runtimes_ask_daemon) variables name it.
        ask_daemon=dict(type="bool", default=True),
        socket=dict(type="path", default="/run/containerd/containerd.sock"),
        crictl_bin=dict(type="str", default="crictl"),
    )


def get_containerd_facts_argument_spec():
    return {"argument_spec": containerd_facts_options(), "supports_check_mode": True}
