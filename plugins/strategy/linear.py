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
  - The collection's playbooks do not need it, they run on P(ansible.builtin.linear#strategy), since the collection's
    stdout callback (P(gpufleet.runtime_gate.console#callback), which the checkout's ansible.cfg selects) gives every
    play it announces the same list. This strategy is for one's own plays that fail many hosts under another stdout
    callback. ansible-core 2.19 prints a deprecation warning for every play on a strategy outside ansible.builtin.
author: gpufleet platform team (@gpufleet)
"""

from ansible.plugins.strategy.linear import StrategyModule as LinearStrategyModule

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._removed_hosts import count_removed_hosts


class StrategyModule(LinearStrategyModule):
    """ansible.builtin.linear over a play whose removed-host list is a ``RemovedHosts``."""

    def run(self, iterator, play_context):
        # ansible-core's PlayIterator and strategies append to and remove from play._removed_hosts; the hosts that
        # failed in earlier plays are already in it when the strategy starts.
        count_removed_hosts(iterator._play)
        return super().run(iterator, play_context)
