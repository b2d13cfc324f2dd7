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


def real_hostvars(extra_vars=None):
    """ansible-core's own HostVars and VariableManager over an inventory of localhost and gpu-1, counting get_vars."""
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.vars.hostvars import HostVars
    from ansible.vars.manager import VariableManager

    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources="localhost,gpu-1,")
    manager = VariableManager(loader=loader, inventory=inventory)
    if extra_vars:
        manager._extra_vars = dict(extra_vars)  # what -e would have loaded
    counted = {"get_vars": 0}
    get_vars = manager.get_vars

    def counting_get_vars(*args, **kwargs):
        counted["get_vars"] += 1
        return get_vars(*args, **kwargs)

    manager.get_vars = counting_get_vars
    return HostVars(inventory=inventory, variable_manager=manager, loader=loader), manager, counted


def test_a_registered_result_is_read_without_computing_all_of_the_hosts_variables():
    hostvars, manager, counted = real_hostvars()
    cluster = {"runtimeclasses": [{"name": "nvidia", "handler": "nvidia"}], "pods": []}
    manager.set_nonpersistent_facts("localhost", {"runtime_gate_cluster": cluster})
    stored = stored_host_variables({"hostvars": hostvars}, "localhost")
    assert stored["runtime_gate_cluster"] is cluster
    assert stored.get("runtime_gate_cluster") is cluster and "runtime_gate_cluster" in stored
    # Its truth too: a host's variables are never empty (the summary tests them once per host).
    assert stored and counted["get_vars"] == 0
    # The same value the long way (HostVars.raw_get computes every variable of the host).
    assert hostvars.raw_get("localhost")["runtime_gate_cluster"] is cluster
    assert counted["get_vars"] == 1


def test_what_overrides_a_registered_result_and_what_is_not_one_are_read_the_long_way():
    hostvars, manager, counted = real_hostvars(extra_vars={"runtime_gate_cluster": "given with -e"})
    manager.set_nonpersistent_facts("localhost", {"runtime_gate_cluster": {"pods": []}, "inventory_hostname": "forged"})
    stored = stored_host_variables({"hostvars": hostvars}, "localhost")
    assert stored["runtime_gate_cluster"] == "given with -e"  # -e wins over a registered result
    assert stored.get("not_set_anywhere") is None and "not_set_anywhere" not in stored
    assert counted["get_vars"] == 1  # computed once, on the first name that needs them
    # A reserved (magic) name is read as ansible-core computes it, whatever it holds.
    assert stored["inventory_hostname"] == hostvars.raw_get("localhost")["inventory_hostname"]
    assert stored_host_variables({"hostvars": hostvars}, "gpu-1").get("runtime_gate_verdict") is None
