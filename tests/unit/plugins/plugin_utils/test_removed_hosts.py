"""A play's removed-host list counted: the same list to ansible-core, looked up without a scan (issue 27's growth:
ansible-core 2.19 looks every play host up in it before every task of every host)."""
import random

from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play import Play
from ansible.vars.manager import VariableManager

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._removed_hosts import RemovedHosts, count_removed_hosts


class CountedName(str):
    """A host name that counts how often it is compared for equality (a list lookup compares each element in turn)."""
    comparisons = 0

    def __eq__(self, other):
        CountedName.comparisons += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def play_hosts_comparisons(removed_list_type, hosts=400, failed=200):
    """Name comparisons ansible-core's VariableManager.get_vars makes for one host's task in a play of ``hosts`` hosts
    of which ``failed`` were removed, with the play's removed-host list of ``removed_list_type``; and the play hosts."""
    loader = DataLoader()
    variable_manager = VariableManager(loader=loader, inventory=InventoryManager(loader=loader, sources=[]))
    play = Play.load({"name": "fleet", "hosts": "all", "gather_facts": False, "tasks": []},
                     variable_manager=variable_manager, loader=loader)
    names = [CountedName(f"node-{index:04d}") for index in range(hosts)]
    play._removed_hosts = removed_list_type(names[1::2][:failed])
    CountedName.comparisons = 0
    variables = variable_manager.get_vars(play=play, _hosts=names, _hosts_all=names, include_hostvars=False)
    return CountedName.comparisons, variables["ansible_play_hosts"], variables["ansible_play_batch"]


def test_play_hosts_are_built_without_scanning_the_failed_hosts():
    counted, play_hosts, play_batch = play_hosts_comparisons(RemovedHosts)
    scanned, list_play_hosts, list_play_batch = play_hosts_comparisons(list)
    # The same magic variables either way: the hosts not removed, in order.
    assert play_hosts == play_batch == list_play_hosts == list_play_batch == [f"node-{index:04d}" for index in range(0, 400, 2)]
    # ansible-core 2.19 scans the list for every play host (about hosts x failed comparisons); the counted list does not.
    assert scanned > 400 * 100, scanned
    assert counted <= 2 * 400, counted


def test_membership_follows_every_change_of_the_list():
    randomness = random.Random(27)
    names = [f"node-{index}" for index in range(6)]
    plain, counted = [], RemovedHosts()
    for _step in range(2000):
        name = randomness.choice(names)
        change = randomness.choice(["append", "remove", "extend", "insert", "pop", "setitem", "delitem", "iadd", "clear"])
        if change in ("remove", "pop", "setitem", "delitem") and not plain or change == "clear" and len(plain) < 8:
            change = "append"
        present = name in plain
        for target in (plain, counted):
            if change == "append":
                target.append(name)
            elif change == "remove":
                if present:
                    target.remove(name)
            elif change == "extend":
                target.extend([name, name])
            elif change == "insert":
                target.insert(1, name)
            elif change == "pop":
                target.pop(0)
            elif change == "setitem":
                target[0] = name
            elif change == "delitem":
                del target[-1]
            elif change == "iadd":
                target += [name]
            elif change == "clear":
                target.clear()
        assert counted == plain
        assert [name in counted for name in names] == [name in plain for name in names], (change, plain)
    assert isinstance(counted, RemovedHosts)


def test_a_play_gets_a_counted_list_with_the_hosts_already_removed():
    """Hosts that failed in earlier plays are in the list before the play starts (TaskQueueManager.run)."""
    play = Play()
    play._removed_hosts.append("node-0001")
    count_removed_hosts(play)
    assert isinstance(play._removed_hosts, RemovedHosts) and play._removed_hosts == ["node-0001"]
    assert "node-0001" in play._removed_hosts and "node-0002" not in play._removed_hosts
    counted = play._removed_hosts
    count_removed_hosts(play)
    assert play._removed_hosts is counted


def test_a_removed_host_list_of_another_kind_is_left_alone():
    """Another ansible-core's play, whose list is not a list: untouched, never broken."""
    play = Play()
    play._removed_hosts = removed = frozenset(["node-0001"])
    count_removed_hosts(play)
    assert play._removed_hosts is removed
    count_removed_hosts(object())
