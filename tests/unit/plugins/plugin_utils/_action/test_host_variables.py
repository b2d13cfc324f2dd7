"""node_crosscheck's options from the host's runtime_gate_* variables: what the playbook's templated arguments did."""
import pytest
from ansible.errors import AnsibleValueOmittedError

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.node_crosscheck import (
    get_node_crosscheck_argument_spec,
)
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.host_variables import (
    HOST_VARIABLES,
    stored_host_variables,
    with_host_variables,
)


def plain(value):
    return value


def test_every_variable_names_an_option_of_the_module():
    options = get_node_crosscheck_argument_spec()["argument_spec"]
    assert set(HOST_VARIABLES) <= set(options)
    assert all(variable.startswith("runtime_gate_") for variable, _empty in HOST_VARIABLES.values())


def test_unset_options_come_from_the_variables_and_given_ones_win():
    task_vars = {"inventory_hostname": "gpu-1", "runtime_gate_containerd_config": "/srv/gpu-1/config.toml",
                 "runtime_gate_containerd_socket": "/run/k3s/containerd/containerd.sock", "runtime_gate_ask_daemon": False,
                 "runtime_gate_dropin_dirs": [], "runtime_gate_node_labels": {"gpu": "true"}}
    args = with_host_variables({"socket": "/given.sock", "cluster_result_var": "cluster"}, task_vars, plain)
    assert args == {"socket": "/given.sock", "cluster_result_var": "cluster", "config_path": "/srv/gpu-1/config.toml",
                    "ask_daemon": False, "dropin_dirs": [], "node_labels": {"gpu": "true"}, "node_name": "gpu-1"}


@pytest.mark.parametrize("variable,option", [
    ("runtime_gate_containerd_bin", "containerd_bin"), ("runtime_gate_dump_file", "dump_file"),
    ("runtime_gate_containerd_version", "containerd_version"), ("runtime_gate_host_root", "host_root"),
    ("runtime_gate_containerd_socket", "socket"),
])
def test_an_empty_path_binary_or_version_is_unset(variable, option):
    assert option not in with_host_variables({}, {"inventory_hostname": "h", variable: ""}, plain)
    assert with_host_variables({}, {"inventory_hostname": "h", variable: "x"}, plain)[option] == "x"


def test_an_empty_list_stays_a_choice():
    # runtime_gate_dropin_dirs: [] lists no drop-in directory; it does not fall back to /etc/containerd/conf.d.
    args = with_host_variables({}, {"inventory_hostname": "h", "runtime_gate_cdi_spec_dirs": []}, plain)
    assert args["cdi_spec_dirs"] == []


def test_node_name_from_its_variable_else_the_inventory_name():
    assert with_host_variables({}, {"inventory_hostname": "h", "runtime_gate_node_name": "node-7"}, plain)["node_name"] == "node-7"
    assert with_host_variables({}, {"inventory_hostname": "h"}, plain)["node_name"] == "h"


def test_values_are_templated_and_omit_is_unset():
    templated = {"{{ base }}/config.toml": "/srv/config.toml"}

    def template(value):
        if value == "{{ omit }}":
            raise AnsibleValueOmittedError("omitted")
        return templated.get(value, value)
    args = with_host_variables({}, {"inventory_hostname": "h", "runtime_gate_containerd_config": "{{ base }}/config.toml",
                                    "runtime_gate_containerd_bin": "{{ omit }}"}, template)
    assert args["config_path"] == "/srv/config.toml" and "containerd_bin" not in args


class StoredHostvars:
    """The part of ansible-core's ``HostVars`` the action plugins use (ansible/vars/hostvars.py): ``in`` asks the
    inventory, ``raw_get`` gives a host's variables as stored, and indexing would template them."""

    def __init__(self, variables):
        self.variables = variables

    def __contains__(self, host):
        return host in self.variables

    def raw_get(self, host):
        return self.variables[host]

    def __getitem__(self, host):
        raise AssertionError("hostvars[host] templates every value it hands out")


def test_stored_host_variables_are_another_hosts_variables_as_stored():
    verdict = {"status": "MISSING", "lines": ["MISSING=nvidia"], "findings": [{"message": "{{ not a template }}"}]}
    task_vars = {"hostvars": StoredHostvars({"gpu-1": {"runtime_gate_verdict": verdict}})}
    assert stored_host_variables(task_vars, "gpu-1")["runtime_gate_verdict"] is verdict
    assert stored_host_variables(task_vars, "not-in-the-inventory") == {}
