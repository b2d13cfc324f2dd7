# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Host variables as the action plugins read them: node_crosscheck's options that a task leaves out, taken from the
host's ``runtime_gate_*`` variables; and another host's variables as stored (``stored_host_variables``).

The variables are the ones the playbooks document (docs/variables.md). Taking them here, not as templated task arguments,
spares every host of a fleet the templates: ansible-core 2.19 compiles each templated argument in each worker, and the
11 of crosscheck.yml's node task cost about 6.5 ms of controller CPU per host (benchmarks/README.md). An option the task
gives wins over the variable; the module's default applies when neither is set.
"""

from collections.abc import Mapping

from ansible.errors import AnsibleValueOmittedError
from ansible.vars.reserved import is_reserved_name

# option: (host variable, whether an empty value means "not set", as `default(omit, true)` treated it in the playbook)
HOST_VARIABLES = {
    "containerd_bin": ("runtime_gate_containerd_bin", True),
    "config_path": ("runtime_gate_containerd_config", False),
    "dump_file": ("runtime_gate_dump_file", True),
    "containerd_version": ("runtime_gate_containerd_version", True),
    "host_root": ("runtime_gate_host_root", True),
    "socket": ("runtime_gate_containerd_socket", True),
    "ask_daemon": ("runtime_gate_ask_daemon", False),
    "dropin_dirs": ("runtime_gate_dropin_dirs", False),
    "cdi_spec_dirs": ("runtime_gate_cdi_spec_dirs", False),
    "node_name": ("runtime_gate_node_name", False),
    "node_labels": ("runtime_gate_node_labels", False),
}


def with_host_variables(task_args, task_vars, template):
    """``task_args`` plus, for each option of ``HOST_VARIABLES`` it lacks, the host's variable, templated by ``template``.

    ``node_name`` falls back to ``inventory_hostname``. A variable that templates to ``omit`` counts as not set.
    """
    args = dict(task_args)
    for option, (variable, empty_means_unset) in HOST_VARIABLES.items():
        if option in args or variable not in task_vars:
            continue
        try:
            value = template(task_vars[variable])
        except AnsibleValueOmittedError:
            continue
        if empty_means_unset and not value:
            continue
        args[option] = value
    if "node_name" not in args and "inventory_hostname" in task_vars:
        args["node_name"] = task_vars["inventory_hostname"]
    return args


def stored_host_variables(task_vars, host):
    """``host``'s variables as stored (registered results, facts), or ``{}`` for a host the inventory does not hold.

    Not ``hostvars[host]``: that templates every value it hands out, which for a registered result means walking and
    copying all of it (a verdict with its findings; the cluster with every Pod). A registered result or a fact is data,
    never a template: ``crosscheck_summary`` spent most of its time there (0.48 s of 0.55 s at 200 hosts, profiled).
    What is read by name (``[name]``, ``get``) comes from ``StoredHostVariables``: a registered result without
    computing all of the host's variables.
    """
    hostvars = task_vars["hostvars"]
    return StoredHostVariables(hostvars, host) if host in hostvars else {}


class StoredHostVariables(Mapping):
    """One host's variables as stored, computed only when a name is not a registered result or ``set_fact`` value.

    ``HostVars.raw_get`` computes every variable of the host (inventory, ``host_vars``/``group_vars`` files through the
    vars plugins, magic variables listing every group's hosts): about 1.3 ms of a worker's CPU at 50 hosts, and more
    the bigger the inventory. Each host's task reads localhost's registered results, and the summary every host's
    verdict: that was O(hosts) per host. Registered results and ``set_fact`` values are where ansible-core 2.19 keeps
    them, its variable manager's non-persistent facts; only extra variables (``-e``) take precedence over them there
    (ansible/vars/manager.py, ``get_vars``), so a name given with ``-e`` is read the long way, as is a reserved (magic)
    name, any other variable, and every name when the variable manager is not ansible-core's."""

    def __init__(self, hostvars, host):
        self._hostvars = hostvars
        self._host = host
        self._all = None

    def _registered(self, name):
        """``(True, value)`` for a registered result or ``set_fact`` value of the host that nothing overrides."""
        manager = getattr(self._hostvars, "_variable_manager", None)
        facts = getattr(manager, "_nonpersistent_fact_cache", None)
        extra_vars = getattr(manager, "extra_vars", None)
        if not isinstance(facts, Mapping) or not isinstance(extra_vars, Mapping) or name in extra_vars \
                or is_reserved_name(name):
            return False, None
        host_facts = facts.get(self._host)
        if isinstance(host_facts, Mapping) and name in host_facts:
            return True, host_facts[name]
        return False, None

    def _variables(self):
        if self._all is None:
            variables = self._hostvars.raw_get(self._host)
            self._all = variables if isinstance(variables, Mapping) else {}
        return self._all

    def __getitem__(self, name):
        found, value = self._registered(name)
        return value if found else self._variables()[name]

    def __contains__(self, name):
        return self._registered(name)[0] or name in self._variables()

    def __iter__(self):
        return iter(self._variables())

    def __len__(self):
        return len(self._variables())

    def __bool__(self):
        # Truth without computing them: an inventory host always has variables (its magic ones at least). A Mapping's
        # truth is otherwise its length, which computed every variable of every host the summary read
        # (``rollout_annotations``' ``host_facts.get(host) or {}``: about 0.26 ms of controller CPU a host).
        return True
