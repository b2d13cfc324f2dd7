# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Wall time and controller CPU of each play set-up and task of a run, written as JSON to $RUNTIME_GATE_TASK_TIMES.

Used by benchmarks/crosscheck_scale and benchmarks/api_mode (ANSIBLE_CALLBACK_PLUGINS +
ANSIBLE_CALLBACKS_ENABLED=task_timer) to say where the time of a run goes. A task's time runs from its start to the
next task's start, so it includes every host's worker and the strategy's bookkeeping. Its controller CPU is what the
cgroup v1 ``cpuacct`` group named by $RUNTIME_GATE_CONTROLLER_CPUACCT spent meanwhile (crosscheck_scale's
``controller`` group, which ansible-playbook runs in: the process, its workers and the commands they run, not the node
hosts' module processes), or null without that variable.
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
short_description: Writes the wall time and controller CPU of each play and task to a JSON file
description:
  - Writes a list of C([name, seconds, controller CPU seconds or null]) to the file named by E(RUNTIME_GATE_TASK_TIMES).
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
        group = os.environ.get("RUNTIME_GATE_CONTROLLER_CPUACCT")
        self._cpuacct_usage = os.path.join(group, "cpuacct.usage") if group else None

    def _begin(self, name):
        now = time.monotonic(), self._controller_cpu()
        self._end(now)
        self._current = (name, now)

    def _end(self, now):
        if self._current:
            name, (started, cpu_started) = self._current
            cpu = now[1] - cpu_started if now[1] is not None and cpu_started is not None else None
            self._timings.append([name, now[0] - started, cpu])
            self._current = None

    def _controller_cpu(self):
        """CPU seconds of the controller's cpuacct group so far, or None."""
        if self._cpuacct_usage is None:
            return None
        try:
            with open(self._cpuacct_usage, encoding="ascii") as usage:
                return int(usage.read()) / 1e9
        except (OSError, ValueError):
            return None

    def v2_playbook_on_play_start(self, play):
        self._begin("play start: " + play.get_name())

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._begin(task.get_name())

    def v2_playbook_on_stats(self, stats):
        self._end((time.monotonic(), self._controller_cpu()))
        path = os.environ.get("RUNTIME_GATE_TASK_TIMES")
        if path:
            with open(path, "w") as handle:
                json.dump(self._timings, handle)
