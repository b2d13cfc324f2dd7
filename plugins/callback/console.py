# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Stdout callback: ansible-core's default output, made readable for the crosscheck and rollout playbooks."""

from __future__ import annotations

DOCUMENTATION = r"""
name: console
type: stdout
short_description: the default output, with each failure shown once and readably
version_added: 0.1.0
description:
  - ansible-core's default stdout callback (P(ansible.builtin.default#callback)) with four changes that make
    C(gpufleet.runtime_gate.crosscheck) and C(gpufleet.runtime_gate.rollout) readable.
  - Task results are YAML by default (O(result_format)), so a failed host's C(MISSING=) lines and findings
    show with real line breaks instead of JSON C(\n) escapes.
  - A failed or unreachable host's C([ERROR]) block is left out when it only repeats the result's C(msg)
    (ansible-core 2.19 prints both); it is kept when it adds anything, such as a traceback or help text.
  - Skipped hosts are not listed by default (O(display_skipped_hosts)), and a play's banner is printed only
    once the play shows something, so a play whose tasks were all skipped leaves no trace before the recap.
  - A host that C(gpufleet.runtime_gate.node_crosscheck) fails is shown as its MISSING or UNKNOWN lines and the
    findings that explain them, below C(-vv) (its C(msg) is one line, for any other callback).
  - A C(run_once) C(debug) task whose C(msg) is a string or a list of strings (the fleet summary) prints it as it
    is, line by line, under the task banner.
  - Above 20 hosts (the fleet view), the hosts that C(gpufleet.runtime_gate.node_crosscheck) passes are one
    C(ok:) line with their count and the first few names, after the task's failures, and the PLAY RECAP lists
    only the hosts that did not pass (failed or unreachable), the others as one count line; at 20 hosts or fewer
    both are printed as by P(ansible.builtin.default#callback). Every host's verdict is in the reports.
  - Each play's failed hosts are looked up in constant time, as by the P(gpufleet.runtime_gate.linear#strategy)
    strategy. ansible-core 2.19 looks every host of the play up in the list of hosts that failed before every task of
    every host, which makes each host's task cost more the more hosts of a large fleet failed (benchmarks/README.md).
    The list, its order and what any plugin sees of it are unchanged.
  - Select it with C(ANSIBLE_STDOUT_CALLBACK=gpufleet.runtime_gate.console) or C(stdout_callback) in ansible.cfg.
extends_documentation_fragment:
  - ansible.builtin.default_callback
  - ansible.builtin.result_format_callback
options:
  result_format:
    name: Format of the task result
    description:
      - The task result format, as in P(ansible.builtin.default#callback), but V(yaml) by default.
    type: str
    default: yaml
    env:
      - name: ANSIBLE_CALLBACK_RESULT_FORMAT
    ini:
      - key: callback_result_format
        section: defaults
    choices:
      - json
      - yaml
  display_skipped_hosts:
    name: Show skipped hosts
    description:
      - Toggle to control displaying skipped task/host results in a task, as in
        P(ansible.builtin.default#callback), but V(false) by default.
    type: bool
    default: false
    env:
      - name: ANSIBLE_DISPLAY_SKIPPED_HOSTS
    ini:
      - key: display_skipped_hosts
        section: defaults
requirements:
  - set as stdout in configuration
"""

import functools
import re
import textwrap

import yaml
from ansible import constants as C
from ansible.utils.color import colorize, hostcolor
from ansible.plugins.callback import _AnsibleCallbackDumper
from ansible.plugins.callback.default import CallbackModule as DefaultCallbackModule
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._printable import printable_lines

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._explain.findings import explanation_lines
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._removed_hosts import count_removed_hosts
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.summary import (
    FLEET_VIEW_ABOVE_HOSTS,
    OK_NAMES_SHOWN,
)

# ansible-core 2.19 wraps a failure's own message in generic events ("Task failed.", "Action failed.").
_GENERIC_EVENT_MSG = re.compile(r"^\w+ failed\.$")
# Tasks whose failure is a host's verdict, all said by its msg (MISSING/UNKNOWN lines, then the findings).
_VERDICT_ACTIONS = frozenset(("gpufleet.runtime_gate.node_crosscheck",))


class CallbackModule(DefaultCallbackModule):

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "gpufleet.runtime_gate.console"

    def __init__(self):
        super().__init__()
        self._pending_play_banner = None
        # The verdict task being shown, how many hosts it has judged so far and its passing results, held until it ends.
        self._verdict_task = None
        self._verdict_task_hosts = 0
        self._held_ok = []
        # The most hosts a verdict task judged (the fleet's size, for the recap); None before a verdict task.
        self._judged_hosts = None

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._release_held_ok()
        super().v2_playbook_on_task_start(task, is_conditional)

    def v2_playbook_on_handler_task_start(self, task):
        self._release_held_ok()
        super().v2_playbook_on_handler_task_start(task)

    def v2_playbook_on_play_start(self, play):
        self._release_held_ok()
        # The play its iterator runs (TaskQueueManager.run hands it here before building the iterator): its failed hosts
        # looked up in constant time, without a strategy plugin of the collection's own (_removed_hosts).
        count_removed_hosts(play)
        name = play.get_name().strip()
        check_marker = " [CHECK MODE]" if play.check_mode and self.get_option("check_mode_markers") else ""
        self._play = play
        self._pending_play_banner = f"PLAY [{name}]{check_marker}" if name else f"PLAY{check_marker}"

    def _flush_play_banner(self):
        if self._pending_play_banner is not None:
            self._display.banner(self._pending_play_banner)
            self._pending_play_banner = None

    def _print_task_banner(self, task):
        self._flush_play_banner()
        super()._print_task_banner(task)

    def v2_playbook_on_no_hosts_matched(self):
        self._flush_play_banner()
        super().v2_playbook_on_no_hosts_matched()

    def v2_playbook_on_no_hosts_remaining(self):
        self._flush_play_banner()
        super().v2_playbook_on_no_hosts_remaining()

    def v2_runner_retry(self, result):
        self._flush_play_banner()
        super().v2_runner_retry(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._count_judged(result)
        self._drop_repeated_error(result.result)
        if result.task.resolved_action in _VERDICT_ACTIONS and isinstance(result.result.get("msg"), str) \
                and self._display.verbosity < 2:
            # The host's MISSING/UNKNOWN lines, then the findings that explain them, as the msg; the rest of the
            # verdict is for the registered result and the reports, not for the failure (`-vv` shows it all).
            lines = result.result.get("lines")
            if isinstance(lines, list) and all(isinstance(line, str) for line in lines) and lines:
                message = "\n".join(lines + explanation_lines(result.result))
            else:
                message = result.result["msg"]
            result.result.clear()
            result.result["msg"] = printable_lines(message)
        super().v2_runner_on_failed(result, ignore_errors)

    def v2_runner_on_unreachable(self, result):
        self._count_judged(result)
        self._drop_repeated_error(result.result)
        super().v2_runner_on_unreachable(result)

    def v2_runner_on_ok(self, result):
        message = result.result.get("msg")
        if isinstance(message, list) and all(isinstance(line, str) for line in message):
            message = "\n".join(message)
        if (result.task.action in C._ACTION_DEBUG and result.task.run_once and isinstance(message, str)
                and not result.result.get("changed", False) and self._display.verbosity < 2):
            if self._last_task_banner != result.task._uuid:
                self._print_task_banner(result.task)
            self._handle_warnings_and_exception(result)
            # Printed as is, so no name in it may write a terminal sequence or a line of its own (_printable).
            self._display.display(printable_lines(message), color=C.COLOR_OK)
            return
        if self._count_judged(result) and self._display.verbosity < 2 and not result.result.get("changed", False) \
                and not result.result.get("warnings") and not result.result.get("deprecations") \
                and self.get_option("display_ok_hosts"):
            # Held until the task ends: printed one by one for a small fleet, as one line for a large one.
            self._held_ok.append(result)
            return
        super().v2_runner_on_ok(result)

    def v2_playbook_on_stats(self, stats):
        self._release_held_ok()
        hosts = sorted(stats.processed)
        fleet_size = self._judged_hosts if self._judged_hosts is not None else len(hosts)
        if fleet_size <= FLEET_VIEW_ABOVE_HOSTS or self._display.verbosity >= 2:
            super().v2_playbook_on_stats(stats)
            return
        summaries = {host: stats.summarize(host) for host in hosts}
        shown = [host for host in hosts if summaries[host]["failures"] or summaries[host]["unreachable"]]
        others = [host for host in hosts if host not in shown]
        self._display.banner("PLAY RECAP")
        for host in shown:
            self._display_recap_line(host, summaries[host])
        if others:
            names = ", ".join(others[:OK_NAMES_SHOWN])
            more = f" and {len(others) - OK_NAMES_SHOWN} more" if len(others) > OK_NAMES_SHOWN else ""
            self._display.display(f"{len(others)} other hosts: failed=0 unreachable=0 ({names}{more}; -vv lists "
                                  "every host)", color=C.COLOR_OK)
        # The rest of the default recap (its closing blank line, custom stats, the DRY RUN banner) without its banner
        # and host lines.
        display = self._display
        self._display = _WithoutBanner(display, "PLAY RECAP")
        try:
            super().v2_playbook_on_stats(_StatsWithoutHosts(stats))
        finally:
            self._display = display

    def _display_recap_line(self, host, summary):
        counts = [(name, summary[key], color) for name, key, color in (
            ("ok", "ok", C.COLOR_OK), ("changed", "changed", C.COLOR_CHANGED),
            ("unreachable", "unreachable", C.COLOR_UNREACHABLE), ("failed", "failures", C.COLOR_ERROR),
            ("skipped", "skipped", C.COLOR_SKIP), ("rescued", "rescued", C.COLOR_OK), ("ignored", "ignored", C.COLOR_WARN))]
        on_screen = " ".join(colorize(name, count, color) for name, count, color in counts)
        in_log = " ".join(colorize(name, count, None) for name, count, _color in counts)
        self._display.display(f"{hostcolor(host, summary)} : {on_screen}", screen_only=True)
        self._display.display(f"{hostcolor(host, summary, False)} : {in_log}", log_only=True)

    def _count_judged(self, result):
        """True for a result of the verdict task (counted as one judged host, its OK held until the task ends)."""
        if result.task.resolved_action not in _VERDICT_ACTIONS:
            return False
        if self._verdict_task is None or self._verdict_task._uuid != result.task._uuid:
            self._release_held_ok()
            self._verdict_task = result.task
        self._verdict_task_hosts += 1
        self._judged_hosts = max(self._judged_hosts or 0, self._verdict_task_hosts)
        return True

    def _release_held_ok(self):
        """Print the held passing results of the verdict task: each as ansible-core would, or one line above
        FLEET_VIEW_ABOVE_HOSTS judged hosts."""
        task, results, judged = self._verdict_task, self._held_ok, self._verdict_task_hosts
        self._verdict_task, self._held_ok, self._verdict_task_hosts = None, [], 0
        if not results:
            return
        if judged <= FLEET_VIEW_ABOVE_HOSTS:
            for result in results:
                super().v2_runner_on_ok(result)
            return
        if self._last_task_banner != task._uuid:
            self._print_task_banner(task)
        names = sorted(self.host_label(result) for result in results)
        shown = ", ".join(names[:OK_NAMES_SHOWN])
        more = f" and {len(names) - OK_NAMES_SHOWN} more" if len(names) > OK_NAMES_SHOWN else ""
        self._display.display(f"ok: {len(names)} hosts passed ({shown}{more})", color=C.COLOR_OK)

    def _dump_results(self, result, indent=None, sort_keys=True, keep_invocation=False, serialize=True):
        """As ansible-core dumps YAML results, but without folding long lines at 80 columns: a failure reason
        stays on one line, as the summary table and grep show it."""
        if not serialize or self.get_option("result_format") != "yaml" or self.get_option("pretty_results") is False:
            return super()._dump_results(result, indent, sort_keys, keep_invocation, serialize)
        abridged_result = super()._dump_results(result, indent, sort_keys, keep_invocation, serialize=False)
        for lines_key, text_key in (("stdout_lines", "stdout"), ("stderr_lines", "stderr")):
            if text_key in abridged_result and lines_key in abridged_result:
                abridged_result[lines_key] = "<omitted>"
        indent = indent or 4
        try:
            # libyaml's emitter takes a C int; no result line is that long.
            dumped = yaml.dump(abridged_result, allow_unicode=True, default_flow_style=False, indent=indent,
                               width=1_000_000, Dumper=functools.partial(_AnsibleCallbackDumper, lossy=True))
        except Exception:  # pylint: disable=broad-except
            # A callback that raises prints nothing for the result: a host's failure would go unseen.
            return super()._dump_results(result, indent, sort_keys, keep_invocation, serialize)
        return "\n" + textwrap.indent(dumped, " " * indent)

    def _drop_repeated_error(self, result):
        """Leave out the ``[ERROR]`` block of a failure when the result's ``msg`` printed next says all it says."""
        message = result.get("msg")
        # Private to ansible-core 2.19 (ErrorSummary); anything else keeps the block.
        summary = getattr(self._current_task_result, "exception", None)
        if not hasattr(summary, "event"):
            return
        if not isinstance(message, str) or self._display.verbosity >= 3:
            return
        events = []
        event = summary.event
        while event is not None:
            events.append(event)
            event = event.chain.event if event.chain else None
        if any(event.formatted_traceback or event.help_text or event.events for event in events):
            return
        if not all(_GENERIC_EVENT_MSG.match(event.msg) for event in events[:-1]):
            return
        if events[-1].msg in message:
            result.pop("exception", None)


class _StatsWithoutHosts:
    """A run's stats as the default recap reads them, with no host: only its custom stats are printed."""

    processed = {}

    def __init__(self, stats):
        self.custom = stats.custom

    def summarize(self, host):
        raise KeyError(host)


class _WithoutBanner:
    """The display, but a banner with the given text is not printed."""

    def __init__(self, display, banner_text):
        self._wrapped = display
        self._banner_text = banner_text

    def banner(self, message, *args, **kwargs):
        if message != self._banner_text:
            self._wrapped.banner(message, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._wrapped, name)
