"""Every rule by which containerd itself exits at start, or its CRI plugin fails on a base_runtime_spec file
(docs/cri-startup.md), decided by real daemons of each release.

For each case a one-file tree (plus a base spec file where the case names one) is started as a real daemon
(support.containerd_daemons): the daemon exits, runs without CRI, or serves runc. The case states which, and our
verdict on that release's `config dump` — with the node's evidence as containerd_facts gathers it (the root file's own
version, the base_runtime_spec files checked under the tree) and the release's version — must say the same: a daemon
that exits or runs without CRI serves nothing (MISSING, with CONTAINERD_WILL_NOT_START or CRI_PLUGIN_FAILS as the
reason); a required plugin that loads only where the node supports it is UNKNOWN from the dump. The plugin table the
required_plugins rule reads (``_facts/daemon_startup.REGISTERED_PLUGINS``) is compared with `ctr plugins ls` on each
release.
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from support.containerd_daemons import config_dump, crictl, releases, remove_daemon, served_by_daemon, start_daemon
from support.tools import require_command

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.base_specs import base_runtime_specs
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import facts_from_dump, root_config_summary
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.daemon_startup import CONDITIONAL_PLUGINS, REGISTERED_PLUGINS
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict import judge_and_explain

ALL, ONE_X, TWO_X = ("1.6", "1.7", "2.0", "2.1", "2.2", "2.3", "2.4"), ("1.6", "1.7"), ("2.0", "2.1", "2.2", "2.3", "2.4")
VERSION = "@VERSION@\n"  # version = 2 on 1.x, 3 on 2.x
RUNC = '[plugins."@CRI@".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
SPEC = "/etc/containerd/base-spec.json"
EXITS, NO_CRI, SERVES = "exits", "no CRI", "serves runc"

# name: (releases, config.toml, other files of /etc/containerd, what the daemon does, the verdict's code or status)
CASES = {
    "required-zfs": (ALL, VERSION + 'required_plugins = ["io.containerd.snapshotter.v1.zfs"]\n', {}, EXITS, "UNKNOWN"),
    "required-unknown": (ALL, VERSION + 'required_plugins = ["io.containerd.nosuch.v1.thing"]\n', {}, EXITS, "CONTAINERD_WILL_NOT_START"),
    "required-overlayfs": (ALL, VERSION + 'required_plugins = ["io.containerd.snapshotter.v1.overlayfs"]\n', {}, SERVES, "OK"),
    "required-disabled": (ALL, VERSION + 'required_plugins = ["io.containerd.snapshotter.v1.native"]\n'
                          'disabled_plugins = ["io.containerd.snapshotter.v1.native"]\n', {}, EXITS, "CONTAINERD_WILL_NOT_START"),
    # 1.x matches required_plugins by plugin ID under a version 1 root (no version line): a URI then matches nothing.
    "v1-root-required-uri-1x": (ONE_X, 'required_plugins = ["io.containerd.snapshotter.v1.overlayfs"]\n', {}, EXITS,
                                "CONTAINERD_WILL_NOT_START"),
    "v1-root-required-uri-2x": (TWO_X, 'required_plugins = ["io.containerd.snapshotter.v1.overlayfs"]\n', {}, SERVES, "OK"),
    "v1-root-required-id": (ALL, 'required_plugins = ["overlayfs"]\n', {}, SERVES, "OK"),
    "v1-root-required-id-zfs": (ALL, 'required_plugins = ["zfs"]\n', {}, EXITS, "UNKNOWN"),
    "root-equals-state": (ALL, VERSION + 'root = "/var/lib/containerd"\nstate = "/var/lib/containerd"\n', {}, EXITS,
                          "CONTAINERD_WILL_NOT_START"),
    "timeout-not-a-duration": (ALL, VERSION + '[timeouts]\n  "io.containerd.timeout.shim.cleanup" = "soon"\n', {}, EXITS,
                               "CONTAINERD_WILL_NOT_START"),
    "base-spec-missing": (ALL, VERSION + RUNC + f'  base_runtime_spec = "{SPEC}"\n', {}, NO_CRI, "CRI_PLUGIN_FAILS"),
    "base-spec-not-json": (ALL, VERSION + RUNC + f'  base_runtime_spec = "{SPEC}"\n', {"base-spec.json": "version = 2\n"},
                           NO_CRI, "CRI_PLUGIN_FAILS"),
    "base-spec-present": (ALL, VERSION + RUNC + f'  base_runtime_spec = "{SPEC}"\n', {"base-spec.json": '{"ociVersion": "1.1.0"}\n'},
                          SERVES, "OK"),
    # A required CRI plugin that fails takes the daemon down with it.
    "required-cri-base-spec-missing": (ALL, VERSION + 'required_plugins = ["io.containerd.grpc.v1.cri"]\n' + RUNC
                                       + f'  base_runtime_spec = "{SPEC}"\n', {}, EXITS, "CONTAINERD_WILL_NOT_START"),
}


def _cases():
    return [pytest.param(name, release, id=f"{name}-{release}") for name, (names, *_rest) in CASES.items() for release in names]


def _release(name):
    return next(release for release in releases() if release.name == name)


def _text(text, release_name):
    one_x = release_name in ONE_X
    return (text.replace("@VERSION@", "version = 2" if one_x else "version = 3")
            .replace("@CRI@", "io.containerd.grpc.v1.cri" if one_x else "io.containerd.cri.v1.runtime"))


def _no_runc_binary(facts):
    # The tree has no runc: the binary rule is another test's (test_verdict_runtime_binaries).
    facts["binaries"] = None
    return facts


@pytest.mark.parametrize("case, release_name", _cases())
def test_the_daemon_and_the_verdict_agree_on_start_up(case, release_name):
    _names, text, files, expected, outcome = CASES[case]
    text = _text(text, release_name)
    release = _release(release_name)
    node_root = Path(tempfile.mkdtemp(prefix="start-"))
    try:
        (node_root / "etc" / "containerd").mkdir(parents=True)
        (node_root / "etc" / "containerd" / "config.toml").write_text(text, encoding="utf-8")
        for name, content in files.items():
            (node_root / "etc" / "containerd" / name).write_text(content, encoding="utf-8")
        daemon = start_daemon(release, node_root)
        try:
            truth = served_by_daemon(daemon, crictl())
        finally:
            remove_daemon(daemon)
        dumped = config_dump(release, node_root)
        # What containerd_facts sends: the base_runtime_spec files the dump names, checked under the node's root.
        specs = base_runtime_specs(dumped.stdout, host_root=str(node_root))
    finally:
        shutil.rmtree(node_root, ignore_errors=True)
    did = EXITS if not truth["running"] else NO_CRI if not truth["cri"] else SERVES if truth["served"] == ["runc"] else truth
    assert did == expected, f"containerd {release} on {case}: {truth}"
    assert dumped.returncode == 0, dumped.stderr
    facts = facts_from_dump(dumped.stdout, source="file", source_name="the dump", version_text=release.version,
                            root_config=root_config_summary(text, "/etc/containerd/config.toml"), base_runtime_specs=specs)
    verdict = judge_and_explain(_no_runc_binary(facts), [], node_name="node", node_labels={})
    if outcome in ("OK", "UNKNOWN"):
        assert verdict["status"] == outcome, verdict
        return
    assert verdict["status"] == "MISSING" and verdict["loaded_runtimes"] == [], verdict
    assert outcome in {finding["code"] for finding in verdict["findings"]}, verdict["findings"]


def test_a_base_spec_the_node_was_not_asked_about_is_unknown():
    """A dump judged by itself (no node evidence) cannot say whether the file exists: UNKNOWN, never OK."""
    dump = 'version = 2\nroot = "/r"\nstate = "/s"\n' + _text(RUNC, "1.7") + f'  base_runtime_spec = "{SPEC}"\n'
    facts = facts_from_dump(dump, source="file", source_name="the dump", version_text="1.7.35")
    verdict = judge_and_explain(facts, [], node_name="node", node_labels={})
    assert verdict["status"] == "UNKNOWN" and SPEC in verdict["reason"], verdict


@pytest.mark.parametrize("release_name", ALL)
def test_the_plugin_table_is_what_each_release_registers(release_name):
    """`ctr plugins ls` on a daemon with an empty config: every plugin it registers is in the table, the table has
    nothing else but btrfs (left out of the test builds: no_btrfs), and every plugin that did not load here is one the
    table counts as loading only where the node supports it."""
    ctr = require_command("ctr", "containerd")
    release = _release(release_name)
    node_root = Path(tempfile.mkdtemp(prefix="plugins-"))
    try:
        (node_root / "etc" / "containerd").mkdir(parents=True)
        (node_root / "etc" / "containerd" / "config.toml").write_text("", encoding="utf-8")
        daemon = start_daemon(release, node_root)
        try:
            assert daemon.running(), daemon.log()[-2000:]
            listed = subprocess.run([ctr, "--address", str(daemon.socket), "plugins", "ls"], capture_output=True,
                                    text=True, timeout=60, check=True).stdout
        finally:
            remove_daemon(daemon)
    finally:
        shutil.rmtree(node_root, ignore_errors=True)
    rows = [line.split() for line in listed.splitlines()[1:] if line.strip()]
    status = {f"{row[0]}.{row[1]}": row[-1] for row in rows}
    table = REGISTERED_PLUGINS[tuple(int(part) for part in release.version.split(".")[:2])]
    assert sorted(set(status) - table) == []
    assert sorted(table - set(status)) in ([], ["io.containerd.snapshotter.v1.btrfs"])
    assert sorted(uri for uri, state in status.items() if state != "ok" and uri not in CONDITIONAL_PLUGINS) == []
