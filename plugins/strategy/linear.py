# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Strategy: ansible.builtin.linear, with the play's failed hosts looked up in constant time."""

from __future__ import annotations

DOCUMENTATION = r"""
name: linear
short_description: ansible.builtin.linear, with a fleet's failed hosts looked up in constant time
version_added: 0.1.0
description:
  - Runs a play exactly as P(ansible.builtin.linear#strategy) does (every task for every host before the next
    task; C(run_once) runs once, after every host's earlier tasks), with one change that keeps the controller's
    time per host flat when many hosts fail.
  - ansible-core 2.19 appends every host that fails (or is unreachable) in a play to a list, and before every task of
    every host it builds that host's C(ansible_play_hosts) and C(ansible_play_batch) by looking each of the play's
    hosts up in that list. A task that fails many hosts of a large fleet (C(gpufleet.runtime_gate.node_crosscheck)
    failing the MISSING and UNKNOWN hosts) then costs each host time in proportion to the fleet's size times the
    hosts failed so far (benchmarks/README.md, issue 27).
  - This strategy keeps a count of each name beside that list, so the lookup costs the same whatever the number
    of failed hosts. The list itself, its order, and what ansible-core or any callback sees are unchanged.
  - Used by C(gpufleet.runtime_gate.crosscheck) (and C(gpufleet.runtime_gate.nightly)) for its per-host play.
author: gpufleet platform team (@gpufleet)
"""

import collections

from ansible.plugins.strategy.linear import StrategyModule as LinearStrategyModule


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


class StrategyModule(LinearStrategyModule):
    """ansible.builtin.linear over a play whose removed-host list is a ``RemovedHosts``."""

    def run(self, iterator, play_context):
        play = iterator._play
        # ansible-core's PlayIterator and strategies append to and remove from play._removed_hosts; the hosts that
        # failed in earlier plays are already in it when the strategy starts.
        removed = play._removed_hosts
        if isinstance(removed, list) and not isinstance(removed, RemovedHosts):
            play._removed_hosts = RemovedHosts(removed)
        return super().run(iterator, play_context)
