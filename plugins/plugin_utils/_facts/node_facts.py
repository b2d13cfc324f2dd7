"""One node's facts as the judgement reads them: the parsed dump, the raw evidence and the daemon's view, apart and
named, with every text of the evidence parsed once.

``NodeFacts.from_evidence`` turns what the node module sent (``_node/evidence``) into this one object, which goes
straight to the verdict (``_verdict.judge_node``): each config file parsed once (``_facts/config_files.ConfigFile``),
the root's own version and imports read from that parse, the dump parsed once (``_containerd_config.facts_from_dump``).
``facts`` is the same as one JSON dict, ``ansible_facts.containerd``, for the containerd_facts task whose result
travels between tasks; ``NodeFacts(facts)`` splits such a dict once per judgement: ``dump`` (what ``config dump``
loaded), ``evidence`` (what the node sent beside it, as sent), ``daemon`` (the running daemon's view,
``_facts/daemon_view``) and ``config_files`` / ``unloaded_dropins`` (the evidence's file texts, parsed here and nowhere
else). ``judge()`` and every host rule (``_host_context.HostContext``) read this one object.
"""

import functools

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.config_files import config_files, unloaded_dropins
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import facts_from_dump, root_config_summary
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.daemon_view import daemon_view
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.binaries import shim_binary_name

# The raw node evidence the facts carry beside the dump's, as the node sent it (None: not sent); shapes in
# docs/daemon-view.md.
EVIDENCE_KEYS = ("config_files", "import_globs", "dropin_dirs", "binaries", "cdi_dirs", "base_runtime_specs")

# ``config_files`` not parsed yet (None is a value: the node sent no files).
_NOT_PARSED = object()


class NodeFacts:
    """The facts of one node, split by what they are; ``facts`` is the dict they came from (``ansible_facts.containerd``).

    ``parsed_config_files``: the ``config_files`` evidence already parsed (``from_evidence``), else parsed on first use.
    """

    def __init__(self, facts, parsed_config_files=_NOT_PARSED):
        self.facts = facts
        self.evidence = {key: facts.get(key) for key in EVIDENCE_KEYS}
        self.daemon = facts.get("daemon") if isinstance(facts.get("daemon"), dict) else None
        self.dump = {key: value for key, value in facts.items() if key not in EVIDENCE_KEYS and key != "daemon"}
        self.loaded_daemon_view = loaded_daemon_view(facts)
        self._config_files = parsed_config_files

    @classmethod
    def from_evidence(cls, evidence):
        """The facts of one node from the raw evidence the ``containerd_facts`` node module returns (``_node/evidence``).

        Each config file the node sent is parsed once, and the root's (``config_files[0]``, role ``root``) version and
        imports are read from that parse; the dump is parsed once. Raises RuntimeGateError for a dump that is no usable
        ``config dump`` output.
        """
        files = config_files(evidence)
        root = files[0] if files and files[0].role == "root" else None
        facts = facts_from_dump(
            evidence["dump_text"],
            source=evidence["source"],
            source_name=evidence["source_name"],
            version_text=evidence.get("version_text"),
            version_source=evidence.get("version_source") or "`containerd --version` on the node",
            root_config=root_config_summary(root and root.text, evidence["config_path"], parsed=root and root.parsed),
            # A command's output is what containerd (or the wrapper the user named) printed; a file is whatever the
            # user pointed at, so it must look like a dump before it is judged as one.
            require_dump_keys=evidence["source"] == "file",
            base_runtime_specs=evidence.get("base_runtime_specs"),
        )
        facts["files_examined"] = evidence.get("files_examined", True) is not False
        for key in EVIDENCE_KEYS:
            facts[key] = evidence.get(key)
        facts["daemon"] = daemon_view(evidence.get("daemon"))
        return cls(facts, files)

    @property
    def config_files(self):
        """The ``config_files`` evidence parsed (``_config_files.ConfigFile``), None when the node sent none."""
        # Parsed on first use (the verdict alone needs no file), then kept: each text is parsed once per judgement.
        if self._config_files is _NOT_PARSED:
            self._config_files = config_files(self.facts)
        return self._config_files

    @functools.cached_property
    def _dropins(self):
        return unloaded_dropins(self.facts)

    @property
    def unloaded_dropins(self):
        """``{path: ConfigFile}`` of the drop-ins no import reached whose text the node sent."""
        return self._dropins[0]

    @property
    def dropin_text_suffixes(self):
        """``{directory: suffixes}`` whose unloaded files carry text."""
        return self._dropins[1]


def node_facts(facts):
    """``facts`` as a NodeFacts (built once; a NodeFacts is returned as it is)."""
    return facts if isinstance(facts, NodeFacts) else NodeFacts(facts)


def runtime_binary_problem(facts, runtime):
    """What keeps a runtime's pods from starting on the node, or None: ``{"binary", "role", "problem"}``.

    The files a sandbox of the runtime needs: its ``BinaryName`` (else ``runc``, for a runc runtime) and the shim its
    ``runtime_type`` names (``io.containerd.kata.v2`` → ``containerd-shim-kata-v2``, runtime/v2/shim/util.go). ``problem``
    is "does not exist" or "is not executable". None as well when the node sent no ``binaries`` evidence for them:
    unknown is not reported as missing (a dump judged by itself, with no host root, examined no file).
    """
    binaries = facts.get("binaries")
    if not isinstance(binaries, dict):
        return None
    runtime_type = runtime.get("runtime_type") or ""
    needed = []
    if runtime.get("binary_name"):
        needed.append((runtime["binary_name"], "BinaryName"))
    elif runtime_type == "io.containerd.runc.v2":
        needed.append(("runc", "runc"))
    shim = shim_binary_name(runtime_type) if runtime_type else None
    if shim:
        needed.append((shim, "shim"))
    for name, role in needed:
        stat = binaries.get(name)
        if not isinstance(stat, dict):
            continue
        if not stat.get("exists"):
            return {"binary": name, "role": role, "problem": "does not exist"}
        if not stat.get("executable"):
            return {"binary": name, "role": role, "problem": "is not executable"}
    return None


def loaded_daemon_view(facts):
    """The running daemon's view (``_facts/daemon_view`` shape) when the node could read it, else None.

    ``state`` ``serving`` carries ``runtimes``; ``cri_unavailable`` means the daemon answered but serves
    no CRI (``runtimes`` []); ``unknown`` or absent evidence gives None: never assumed equal to the dump.
    None as well unless the dump came from running containerd on that node (``source`` ``command``): a dump
    read from a file may be another node's capture, which this node's daemon says nothing about (as
    ``runtime_binary_problem``).
    """
    if facts.get("source") != "command":
        return None
    daemon = facts.get("daemon")
    if not isinstance(daemon, dict) or daemon.get("state") not in ("serving", "cri_unavailable"):
        return None
    runtimes = daemon.get("runtimes") if daemon["state"] == "serving" else []
    if not isinstance(runtimes, list) or not all(isinstance(name, str) for name in runtimes):
        return None
    return dict(daemon, runtimes=sorted(runtimes))


def runtime_facts(facts, name):
    """A runtime's ``{runtime_type, binary_name, options}``: from the dump, else from the daemon's view."""
    runtime = (facts.get("runtimes") or {}).get(name)
    if isinstance(runtime, dict):
        return runtime
    daemon = facts.get("daemon") if isinstance(facts.get("daemon"), dict) else {}
    details = daemon.get("runtime_details") if isinstance(daemon.get("runtime_details"), dict) else {}
    return details.get(name) if isinstance(details.get(name), dict) else {}
