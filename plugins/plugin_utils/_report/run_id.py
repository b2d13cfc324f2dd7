# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The run a report belongs to: its ``run_id``, named by the user (``runtime_gate_run_id``) or made unique per run.

Sliced runs are separate ansible-playbook invocations, so only the user can say which of them make one run: every
slice and the merge are given the same ``runtime_gate_run_id`` (docs/awx.md). A run not named gets an id of its own
(``unnamed-<generated_at>-<random>``), so no other run's report can pass for one of its slices: unnamed slices are
never merged with each other. The id goes into every report, so it is checked where it enters: a short name of
letters, digits and ``.``, ``_``, ``:``, ``-`` (the same pattern as docs/report.schema.json).
"""

import re
import secrets

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError, shown_value

RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
RUN_ID_RULE = "a run name: a letter or digit, then at most 127 letters, digits, '.', '_', ':' or '-'"
UNNAMED_PREFIX = "unnamed-"


def run_id_for(given, generated_at):
    """``given`` checked, or when it is None or empty an id of this run alone, from ``generated_at`` and 8 random hex."""
    if given is None or given == "":
        compact = generated_at.replace("-", "").replace(":", "")
        return f"{UNNAMED_PREFIX}{compact}-{secrets.token_hex(4)}"
    if not isinstance(given, str) or not RUN_ID.fullmatch(given):
        raise RuntimeGateError(f"run_id (runtime_gate_run_id) {shown_value(given)} is not {RUN_ID_RULE}")
    return given


def is_unnamed(run_id):
    return run_id.startswith(UNNAMED_PREFIX)
