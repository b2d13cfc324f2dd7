# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""A ``config dump`` of the change path, parsed once: the node's current one (``_change/outcome.current_state``) and
the candidate's (``_change/proof.prove_candidate``). Controller side.

Every reader of a dump in the change path takes this object — the facts (``_facts/containerd_config``), the whole
configuration before and after (``_change/loaded_config_diff``), the files it loads (``imports``), the socket it names
(``_change/address``) — so each dump's text is parsed once per task.
"""

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import parse_dump_text
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.loaded_config_diff import leaves


class LoadedConfig:
    """One ``config dump``: its ``text``, its ``document`` (parsed here, once) and its ``leaves`` (on first use).

    Raises RuntimeGateError, naming ``source_name``, for a text that is empty or no TOML."""

    def __init__(self, text, source_name):
        self.text = text
        self.source_name = source_name
        self.document = parse_dump_text(text, source_name)
        self._leaves = None

    @property
    def leaves(self):
        """``{key path: value}`` of every non-table value (``loaded_config_diff.leaves``)."""
        if self._leaves is None:
            self._leaves = leaves(self.document)
        return self._leaves

    @property
    def imports(self):
        """The dump's top-level ``imports``: on 1.x the files that loaded, on 2.x the patterns (containerd-loading.md §1)."""
        entries = self.document.get("imports")
        return [entry for entry in entries if isinstance(entry, str)] if isinstance(entries, list) else []
