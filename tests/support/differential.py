"""Differential testing: the verdict against what a real containerd daemon serves, tree by tree, release by release.

For one generated tree and one release: the real daemon starts on the tree (support.containerd_daemons) and ``crictl
info`` says what it serves — the truth. Our verdict is then made three ways, each as production makes it (the node
module's ``gather`` + ``gather_surroundings``, the controller's ``NodeFacts.from_evidence`` and ``judge``):

* ``live``: containerd runs on the node's tree (the containerd-at-etc wrapper under ``host_root``) and the running
  daemon is asked over its socket with the real crictl;
* ``dump``: the dump that release printed, judged by itself — no version, no host root, no daemon;
* ``dump+root``: the same dump with the node's tree as ``host_root`` and the version file beside it.

Truth, one of two kinds (``truth["kind"]``): ``sandbox`` — a handler is served when a pod sandbox of it starts
(``crictl runp --runtime <handler>`` with the pause image reaches SANDBOX_READY; the tree's usr/bin holds the release's
real runc shim and a runc wrapper, RUNC_WRAPPER), whatever ``crictl info`` lists; ``crictl info`` — what the daemon
serves, less (for the modes that examine the node's files) the handlers whose sandboxes
cannot start because the shim or runtime binary they need is not in the node's tree (``startable``; a daemon lists such a
handler all the same). Each mode's served set (``loaded_runtimes``; nothing for UNKNOWN) is compared with it for every
handler a tree can define: a handler we serve that the daemon does not is a false OK, the reverse a false MISSING; UNKNOWN while the
daemon serves the handler is reported as such (fail closed, but a disagreement all the same).
"""
from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from support.config_trees import ALL_HANDLERS, Tree
from support.oci_images import PAUSE_IMAGE
from support.containerd_daemons import Release, config_dump, containerd_wrapper, remove_daemon, served_by_daemon, start_daemon

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.node_facts import NodeFacts
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict import judge_and_explain
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.evidence import gather, gather_surroundings

MODES = ("live", "dump", "dump+root")
RUNTIMECLASSES = [{"name": f"rc-{handler}", "handler": handler, "node_selector": None, "overhead_pod_fixed": None,
                   "tolerations": []} for handler in ALL_HANDLERS]


def _params(**overrides):
    values = {"containerd_bin": None, "config_path": "/etc/containerd/config.toml", "host_root": None, "dump_file": None,
              "containerd_version": None, "timeout": 60, "dropin_dirs": ["/etc/containerd/conf.d"],
              "cdi_spec_dirs": ["/etc/cdi"], "ask_daemon": False, "socket": "/nonexistent.sock", "crictl_bin": "crictl"}
    values.update(overrides)
    return values


def verdict_for(params):
    """(verdict, or None with the reason it is UNKNOWN)."""
    evidence, error = gather(params)
    if error:
        return None, error
    try:
        node = NodeFacts.from_evidence(gather_surroundings(params, evidence))
    except RuntimeGateError as failure:
        return None, str(failure)
    return judge_and_explain(node, RUNTIMECLASSES, node_name="node", node_labels={}), None


# The sandbox truth's runc (the tree's /usr/bin/runc): what these machines cannot give a sandbox is taken out of runc's
# arguments and bundle, nothing else — no systemd (``--systemd-cgroup`` dropped: cgroupfs) and no CAP_SYS_RESOURCE (the
# bundle's ``oomScoreAdj`` set to 0, as containerd's ``restrict_oom_score_adj`` would). Then the machine's runc.
RUNC_WRAPPER = """#!/bin/sh
# runc for the differential's sandbox truth (tests/support/differential.py)
previous=
for argument in "$@"; do
    if [ "$previous" = --bundle ] || [ "$previous" = -b ]; then
        sed -i 's/"oomScoreAdj":-\\{0,1\\}[0-9]*/"oomScoreAdj":0/' "$argument/config.json"
    fi
    previous=$argument
done
for argument in "$@"; do
    shift
    [ "$argument" = --systemd-cgroup ] || set -- "$@" "$argument"
done
exec {runc} "$@"
"""
# The pause image under the name each release's CRI uses by default (1.6.20: 3.6, 1.7.35: 3.8, 2.0-2.2: 3.10,
# 2.3.4/2.4.2: 3.10.2; each seen in its pull error), plus
# the project's own name; trees in the generator never set sandbox_image.
PAUSE_NAMES = ("registry.k8s.io/pause:3.6", "registry.k8s.io/pause:3.8", "registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.10.2",
               "registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10.1")
SANDBOX_SECONDS = 60


def _link_or_copy(source: str, target: Path):
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


# Executables the trees run (the containerd wrapper, the runc wrapper), each written once per run and hard-linked into
# every tree. A file being written while another thread forks stays open for writing in that child until it execs,
# and running the file then fails with ETXTBSY ("Text file busy"): with several daemons at once that happened to about
# one daemon in 700 when each tree wrote its own. ``prepare_executables`` writes them before the threads start.
_EXECUTABLES_LOCK = threading.Lock()
_EXECUTABLES: dict = {}


def _executables_dir() -> Path:
    if "dir" not in _EXECUTABLES:
        directory = Path(tempfile.mkdtemp(prefix="diff-executables-"))
        atexit.register(shutil.rmtree, directory, True)
        _EXECUTABLES["dir"] = directory
    return _EXECUTABLES["dir"]


def _runc_wrapper() -> str:
    with _EXECUTABLES_LOCK:
        if "runc" not in _EXECUTABLES:
            path = _executables_dir() / "runc"
            path.write_text(RUNC_WRAPPER.replace("{runc}", shutil.which("runc") or "/usr/sbin/runc"), encoding="utf-8")
            path.chmod(0o755)
            _EXECUTABLES["runc"] = str(path)
        return _EXECUTABLES["runc"]


def _containerd_wrapper(release: Release) -> str:
    with _EXECUTABLES_LOCK:
        key = ("containerd", release.version)
        if key not in _EXECUTABLES:
            _EXECUTABLES[key] = containerd_wrapper(release, _executables_dir())
        return _EXECUTABLES[key]


def prepare_executables(releases) -> None:
    """Write every executable the trees run, before any thread forks (see _EXECUTABLES)."""
    _runc_wrapper()
    for release in releases:
        _containerd_wrapper(release)


def sandbox_binaries(node_root: Path, release: Release):
    """The node's runc (RUNC_WRAPPER) and the release's own runc shim, in its usr/bin."""
    _link_or_copy(_runc_wrapper(), node_root / "usr" / "bin" / "runc")
    _link_or_copy(os.path.join(os.path.dirname(release.binary), "containerd-shim-runc-v2"),
                  node_root / "usr" / "bin" / "containerd-shim-runc-v2")


def _run(argv, timeout=SANDBOX_SECONDS, **kwargs):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, cwd="/", **kwargs)


def sandbox_served(daemon, truth, crictl_bin: str, ctr_bin: str, pause_tar: Path) -> dict:
    """handler -> None when a pod sandbox of that handler reached SANDBOX_READY (``crictl runp --runtime``, host network,
    the pause image imported with ``ctr --local``), else why not. Every handler the daemon lists is tried."""
    if not truth["cri"]:
        return {}
    ctr = [ctr_bin, "--address", str(daemon.socket), "--namespace", "k8s.io"]
    for snapshotter in ("overlayfs", "native"):
        _run([*ctr, "images", "import", "--local", "--snapshotter", snapshotter, str(pause_tar)])
    for name in PAUSE_NAMES:
        _run([*ctr, "images", "tag", "--local", "--force", PAUSE_IMAGE, name])
    crictl = [crictl_bin, "--runtime-endpoint", f"unix://{daemon.socket}", "--timeout", "30s"]
    env = dict(os.environ, HOME=str(daemon.work_dir))
    results = {}
    for handler in sorted(truth["runtimes"]):
        config = daemon.work_dir / f"sandbox-{handler}.json"
        config.write_text(json.dumps({"metadata": {"name": f"truth-{handler}", "namespace": "differential",
                                                   "uid": f"truth-{handler}", "attempt": 0},
                                      "linux": {"security_context": {"namespace_options": {"network": 2}}}}),
                          encoding="utf-8")
        started = _run([*crictl, "runp", "--runtime", handler, str(config)], env=env)
        if started.returncode != 0:
            results[handler] = (started.stderr.strip() or started.stdout.strip())[-300:]
            continue
        sandbox_id = started.stdout.strip().splitlines()[-1]
        inspected = _run([*crictl, "inspectp", sandbox_id], env=env)
        state = json.loads(inspected.stdout)["status"]["state"] if inspected.returncode == 0 else inspected.stderr
        results[handler] = None if state == "SANDBOX_READY" else f"sandbox state {state}"
        _run([*crictl, "stopp", sandbox_id], env=env)
        _run([*crictl, "rmp", "--force", sandbox_id], env=env)
    return results


def judge_tree(tree: Tree, release: Release, crictl_bin: str, sandbox: dict | None = None) -> dict:
    """Truth and the three verdicts for ``tree`` on ``release``: ``{"truth", "modes": {mode: {...}}, "disagreements"}``.

    ``sandbox`` (``{"ctr": path, "pause": OCI tar}``): sandbox truth — a handler is served when its pod sandbox starts
    (``sandbox_served``), with the release's real runc shim and a runc wrapper (RUNC_WRAPPER) in the node's usr/bin;
    else ``crictl info`` truth, with stand-ins (/bin/true) for those binaries."""
    scratch = Path(tempfile.mkdtemp(prefix="diff-"))
    try:
        node_root = tree.write(scratch / "node")
        if sandbox:
            sandbox_binaries(node_root, release)
        else:
            # The node's runtimes: BinaryName /usr/bin/runc and the runc shim exist on the node, as on this machine.
            for binary in ("usr/bin/runc", "usr/bin/containerd-shim-runc-v2"):
                (node_root / binary).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy("/bin/true", node_root / binary)
        daemon = start_daemon(release, node_root, sandboxes=bool(sandbox))
        try:
            truth = served_by_daemon(daemon, crictl_bin)
            truth["kind"] = "sandbox" if sandbox else "crictl info"
            if sandbox:
                truth["sandboxes"] = sandbox_served(daemon, truth, crictl_bin, sandbox["ctr"], sandbox["pause"])
            modes = {}
            wrapper = _containerd_wrapper(release)
            modes["live"] = verdict_for(_params(containerd_bin=wrapper, host_root=str(node_root), ask_daemon=True,
                                                socket=str(daemon.socket), crictl_bin=crictl_bin))
        finally:
            remove_daemon(daemon)
        dumped = config_dump(release, node_root)
        alone, beside_root = scratch / "alone", scratch / "beside"
        alone.mkdir()
        beside_root.mkdir()
        for directory in (alone, beside_root):
            (directory / "config-dump.toml").write_text(dumped.stdout if dumped.returncode == 0 else "", encoding="utf-8")
        (beside_root / "containerd-version.txt").write_text(f"containerd github.com/containerd/containerd v{release.version}\n")
        if dumped.returncode != 0:
            failure = (None, f"config dump exited {dumped.returncode}: {dumped.stderr.strip()[-300:]}")
            modes["dump"] = modes["dump+root"] = failure
        else:
            modes["dump"] = verdict_for(_params(dump_file=str(alone / "config-dump.toml")))
            modes["dump+root"] = verdict_for(_params(dump_file=str(beside_root / "config-dump.toml"), host_root=str(node_root)))
        return compare(tree, release, truth, modes, node_root)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# Where the node's PATH finds a bare binary name (containerd's systemd unit).
NODE_PATH = ("usr/local/sbin", "usr/local/bin", "usr/sbin", "usr/bin", "sbin", "bin")


def startable(truth, node_root):
    """The handlers the daemon serves whose sandboxes can start on the node: the shim its runtime type names and the
    runtime binary (BinaryName, else runc for runc.v2) exist in the node's tree. Read from the daemon's own runtime
    list and the tree, independently of the code under test."""
    def exists(name):
        if name.startswith("/"):
            return (node_root / name.lstrip("/")).exists()
        return any((node_root / directory / name).exists() for directory in NODE_PATH)

    usable = []
    for handler in truth["served"]:
        runtime_type = truth["runtimes"][handler]
        parts = runtime_type.split(".")
        shim = runtime_type if runtime_type.startswith("/") else f"containerd-shim-{parts[-2]}-{parts[-1]}"
        binary = truth["binaries"].get(handler) or ("runc" if runtime_type == "io.containerd.runc.v2" else None)
        if exists(shim) and (binary is None or exists(binary)):
            usable.append(handler)
    return usable


def compare(tree, release, truth, modes, node_root):
    if truth["kind"] == "sandbox":
        # A handler whose sandbox does not start is not served, whatever the daemon lists.
        startable_truth = {handler for handler, failure in truth["sandboxes"].items() if failure is None} & set(ALL_HANDLERS)
    else:
        startable_truth = set(startable(truth, node_root)) & set(ALL_HANDLERS)
    disagreements, results = [], {}
    for mode in MODES:
        # A dump judged by itself examines no file of the node: it can know what the daemon lists, not which binaries exist.
        served_truth = set(truth["served"]) & set(ALL_HANDLERS) if mode == "dump" else startable_truth
        verdict, reason = modes[mode]
        status = "UNKNOWN" if verdict is None else verdict["status"]
        served = None if status == "UNKNOWN" else set(verdict["loaded_runtimes"]) & set(ALL_HANDLERS)
        results[mode] = {"status": status, "served": served,
                         "reason": reason or (verdict or {}).get("reason"), "explained": (verdict or {}).get("missing_explained")}
        if served is None:
            if mode == "dump" and any(phrase in str(results[mode]["reason"]) for phrase in UNDECIDABLE_FROM_DUMP):
                # The dump lacks what decides it (a 1.x root's version): UNKNOWN is the right answer there, and the
                # modes with the node's files must then decide it correctly.
                results[mode]["undecidable"] = True
                continue
            if served_truth:
                disagreements.append({"mode": mode, "kind": "unknown-while-served", "handlers": sorted(served_truth),
                                      "reason": reason})
            continue
        false_ok = sorted(served - served_truth)
        false_missing = sorted(served_truth - served)
        if false_ok:
            disagreements.append({"mode": mode, "kind": "false-ok", "handlers": false_ok, "reason": results[mode]["reason"]})
        if false_missing:
            disagreements.append({"mode": mode, "kind": "false-missing", "handlers": false_missing,
                                  "reason": results[mode]["reason"]})
        disagreements.extend(dict(wrong, mode=mode) for wrong in wrong_reasons(mode, truth, verdict))
    return {"seed": tree.seed, "release": release.version, "truth": truth, "modes": results, "disagreements": disagreements}


# What a verdict's reason says when the dump alone cannot decide (the verdict is UNKNOWN, which fails closed): a 1.x
# root's version, a base_runtime_spec file on the node, a required plugin of a release the dump does not name.
UNDECIDABLE_FROM_DUMP = ("judge it with the node's root config (host_root)", "(the node's files were not examined)",
                         "whether it loads is not known")

# containerd's last line when it exits at start for a rule of docs/cri-startup.md (the dump printed the config).
START_UP_EXITS = ("required plugin", "root and state must be different paths", "into a time duration")

# The codes that may say "the CRI plugin does not serve": its start-up checks, the default runtime, the daemon's own word.
CRI_DOWN_CODES = {"CRI_PLUGIN_FAILS", "DEFAULT_RUNTIME_UNDEFINED", "CRI_UNAVAILABLE"}


def wrong_reasons(mode, truth, verdict):
    """The generated causes the daemon confirmed, each needing its reason code in the verdict's explanation.

    CRI down (daemon up, no CRI service) needs a CRI code; a handler the daemon lists with an empty runtime type needs
    RUNTIME_TYPE_MISSING; with the node's files at hand (``live``, ``dump+root``) no missing handler stays unexplained.
    """
    codes = {finding["code"] for finding in verdict["findings"]}
    explained = verdict.get("missing_explained") or {}
    wrong = []
    if not truth["running"] and any(line in str(truth["error"]) for line in START_UP_EXITS) and "CONTAINERD_WILL_NOT_START" not in codes:
        wrong.append({"kind": "wrong-reason", "handlers": sorted(explained), "reason": f"daemon exits, codes {sorted(codes)}"})
    if truth["running"] and not truth["cri"] and not codes & CRI_DOWN_CODES:
        wrong.append({"kind": "wrong-reason", "handlers": sorted(explained), "reason": f"CRI down, codes {sorted(codes)}"})
    for handler, runtime_type in sorted(truth["runtimes"].items()):
        if truth["cri"] and not runtime_type and handler in explained and "RUNTIME_TYPE_MISSING" not in explained[handler]:
            wrong.append({"kind": "wrong-reason", "handlers": [handler],
                          "reason": f"empty runtime_type, explained by {explained[handler]}"})
    if mode != "dump":
        unexplained = sorted(handler for handler, reasons in explained.items() if not reasons)
        if unexplained:
            wrong.append({"kind": "wrong-reason", "handlers": unexplained, "reason": "no finding explains it"})
    return wrong


def describe(tree: Tree, outcome: dict) -> str:
    truth = outcome["truth"]
    lines = [f"containerd {outcome['release']} (truth: {truth['kind']}): daemon running={truth['running']} cri={truth['cri']} "
             f"serves={truth['served']} runtimes={truth['runtimes']} error={str(truth['error'])[-300:]!r}"]
    if truth.get("sandboxes") is not None:
        lines.append(f"  sandboxes: {truth['sandboxes']}")
    for mode, result in outcome["modes"].items():
        lines.append(f"  {mode}: {result['status']} served={sorted(result['served']) if result['served'] is not None else None} "
                     f"reason={str(result['reason'])[:300]!r}")
    for disagreement in outcome["disagreements"]:
        lines.append(f"  DISAGREEMENT {disagreement}")
    return "\n".join(lines) + "\n" + tree.show()
