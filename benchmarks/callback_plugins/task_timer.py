# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Wall time of each play set-up and task of a run, written as JSON to $RUNTIME_GATE_TASK_TIMES.

Used by benchmarks/crosscheck_scale (ANSIBLE_CALLBACK_PLUGINS + ANSIBLE_CALLBACKS_ENABLED=task_timer) to
say where the time of a run goes. A task's time runs from its start to the next task's start, so it
includes every host's worker and the strategy's bookkeeping.
"""

from __future__ import absolute_import, division, print_function

import json
import os
import time

from ansible.plugins.callback import CallbackBase

__metaclass__ = type

DOCUMENTATION = r"""
name: task_timer
type: aggregate
short_description: Writes the wall time of each play and task to a JSON file
description:
  - Writes a list of C([name, seconds]) pairs to the file named by E(RUNTIME_GATE_TASK_TIMES).
requirements:
  - enable in configuration
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "task_timer"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super(CallbackModule, self).__init__()
        self._timings = []
        self._current = None

    def _begin(self, name):
        now = time.monotonic()
        self._end(now)
        self._current = (name, now)

    def _end(self, now):
        if self._current:
            self._timings.append([self._current[0], now - self._current[1]])
            self._current = None

    def v2_playbook_on_play_start(self, play):
        self._begin("play start: " + play.get_name())

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._begin(task.get_name())

    def v2_playbook_on_stats(self, stats):
        self._end(time.monotonic())
        path = os.environ.get("RUNTIME_GATE_TASK_TIMES")
        if path:
            with open(path, "w") as handle:
                json.dump(self._timings, handle)
