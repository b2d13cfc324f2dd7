"""Test-only callback: each play's removed-host list as its iterator left it (the list's type and its names), written as
JSON to $RUNTIME_GATE_REMOVED_HOSTS_PROBE at the end of the run. ansible-core hands every callback the same play object
the iterator runs (TaskQueueManager.run), the stdout callback first."""
import json
import os

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "removed_hosts_probe"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._plays = []

    def v2_playbook_on_play_start(self, play):
        self._plays.append(play)

    def v2_playbook_on_stats(self, stats):
        probed = [{"play": play.get_name(), "strategy": play.strategy, "list_type": type(play._removed_hosts).__name__,
                   "removed": list(play._removed_hosts)} for play in self._plays]
        with open(os.environ["RUNTIME_GATE_REMOVED_HOSTS_PROBE"], "w", encoding="utf-8") as probe_file:
            json.dump(probed, probe_file)
