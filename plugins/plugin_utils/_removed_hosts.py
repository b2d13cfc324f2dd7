# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""A play's failed hosts looked up in constant time (issue 27's growth, benchmarks/README.md).

ansible-core 2.19 appends every host that fails (or is unreachable, or ends) in a play to ``play._removed_hosts``, and
before every task of every host builds that host's ``ansible_play_hosts`` and ``ansible_play_batch`` by looking each of
the play's hosts up in that list (vars/manager.py, ``_get_magic_variables``). A task that fails many hosts of a large
fleet (node_crosscheck failing the MISSING and UNKNOWN hosts) then costs each later host's task time in proportion to
the fleet's size times the hosts failed so far. ``count_removed_hosts`` gives the play a list that keeps a count of
each name beside it: the same list to ansible-core and every callback, looked up without a scan.

The console callback does it for every play it announces (ansible-core hands ``v2_playbook_on_play_start`` the very
play its iterator runs: task_queue_manager.py, ``TaskQueueManager.run``); the ``gpufleet.runtime_gate.linear`` strategy
for the plays that run on it, whatever the stdout callback.
"""

import collections


class RemovedHosts(list):
    """The play's list of removed (failed, unreachable, ended) host names, with a count of each name kept beside it:
    ``name in removed`` is a dictionary lookup instead of a scan. Every way ansible-core changes the list (append,
    remove) keeps the count; any other change recounts."""

    def __init__(self, names=()):
        super().__init__(names)
        self._counts = collections.Counter(self)

    def __contains__(self, name):
        return self._counts.get(name, 0) > 0

    def append(self, name):
        super().append(name)
        self._counts[name] += 1

    def remove(self, name):
        super().remove(name)
        self._counts[name] -= 1

    def _recount(self):
        self._counts = collections.Counter(self)


def _recounting(method_name):
    method = getattr(list, method_name)

    def changed(self, *args, **kwargs):
        value = method(self, *args, **kwargs)
        self._recount()
        return value

    changed.__name__ = method_name
    return changed


# Changes ansible-core does not make today (it appends and removes), kept correct all the same.
for _method_name in ("extend", "insert", "pop", "clear", "__setitem__", "__delitem__", "__iadd__", "__imul__"):
    setattr(RemovedHosts, _method_name, _recounting(_method_name))


def count_removed_hosts(play):
    """Give ``play`` (an ansible-core Play) a ``RemovedHosts`` holding the names its removed-host list holds now (hosts
    that failed in earlier plays may already be in it). Nothing changes for a play that has one, or whose list is not a
    list (another ansible-core: its own then, untouched)."""
    removed = getattr(play, "_removed_hosts", None)
    if isinstance(removed, list) and not isinstance(removed, RemovedHosts):
        play._removed_hosts = RemovedHosts(removed)  # pylint: disable=protected-access
