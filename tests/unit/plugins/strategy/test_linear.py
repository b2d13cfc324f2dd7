"""The collection's linear strategy: ansible.builtin.linear over a play whose removed-host list is counted
(plugin_utils/_removed_hosts; the crosscheck's plays get it from the console callback instead)."""
from types import SimpleNamespace

from ansible.playbook.play import Play
from ansible.plugins.strategy.linear import StrategyModule as LinearStrategyModule

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._removed_hosts import RemovedHosts
from ansible_collections.gpufleet.runtime_gate.plugins.strategy.linear import StrategyModule


def test_the_strategy_gives_the_play_a_counted_list_with_the_hosts_already_removed(monkeypatch):
    """Hosts that failed in earlier plays are in the list before the strategy starts (TaskQueueManager.run)."""
    seen = {}
    monkeypatch.setattr(LinearStrategyModule, "run",
                        lambda self, iterator, play_context: seen.setdefault("removed", iterator._play._removed_hosts))
    play = Play()
    play._removed_hosts.append("node-0001")
    StrategyModule.run(object.__new__(StrategyModule), SimpleNamespace(_play=play), None)
    assert isinstance(seen["removed"], RemovedHosts) and seen["removed"] == ["node-0001"], seen
    assert "node-0001" in play._removed_hosts and "node-0002" not in play._removed_hosts
