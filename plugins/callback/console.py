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
  - A host that C(gpufleet.runtime_gate.node_crosscheck) fails is shown as its C(msg) only (its MISSING or UNKNOWN
    lines and the findings that explain them), below C(-vv).
  - A C(run_once) C(debug) task whose C(msg) is a string (the fleet summary table) prints it as it is,
    line by line, under the task banner.
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
from ansible.plugins.callback import _AnsibleCallbackDumper
from ansible.plugins.callback.default import CallbackModule as DefaultCallbackModule
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._printable import printable_lines

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

    def v2_playbook_on_play_start(self, play):
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
        self._drop_repeated_error(result.result)
        if result.task.resolved_action in _VERDICT_ACTIONS and isinstance(result.result.get("msg"), str) \
                and self._display.verbosity < 2:
            # The host's MISSING/UNKNOWN lines and findings are its msg; the rest of the verdict is for the
            # registered result and the reports, not for the failure line (`-vv` shows it all).
            message = result.result["msg"]
            result.result.clear()
            result.result["msg"] = printable_lines(message)
        super().v2_runner_on_failed(result, ignore_errors)

    def v2_runner_on_unreachable(self, result):
        self._drop_repeated_error(result.result)
        super().v2_runner_on_unreachable(result)

    def v2_runner_on_ok(self, result):
        message = result.result.get("msg")
        if (result.task.action in C._ACTION_DEBUG and result.task.run_once and isinstance(message, str)
                and not result.result.get("changed", False) and self._display.verbosity < 2):
            if self._last_task_banner != result.task._uuid:
                self._print_task_banner(result.task)
            self._handle_warnings_and_exception(result)
            # Printed as is, so no name in it may write a terminal sequence or a line of its own (_printable).
            self._display.display(printable_lines(message), color=C.COLOR_OK)
            return
        super().v2_runner_on_ok(result)

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
