"""Every CRI start-up rule (docs/cri-startup.md) proven by a real daemon of each release it concerns.

For each case a one-file tree is started as a real daemon (support.containerd_daemons) and `crictl info` says whether
the CRI service runs and which handlers it lists with a runtime type; the case states what the daemon must do, and our
verdict on that release's `config dump` (with the root file's own version, as containerd_facts reads it; no other file)
must say the same, with CRI_PLUGIN_FAILS as the reason when the plugin refuses. Judged alone, a 1.x dump disabling a
plugin by URI must be UNKNOWN: only the root's version decides how that list matches. The generated trees of
tests/integration/differential cover the common causes in combination; these cover each rule on its own, including the rare ones.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from support.containerd_daemons import config_dump, crictl, releases, remove_daemon, served_by_daemon, start_daemon

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import facts_from_dump, root_config_summary
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict import judge, judge_and_explain

V2 = 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
CRI2 = '[plugins."io.containerd.grpc.v1.cri"]\n'
CD2 = '[plugins."io.containerd.grpc.v1.cri".containerd]\n'
V3 = 'version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
IMAGES3 = '[plugins."io.containerd.cri.v1.images"]\n'
ONE_X, TWO_X = ("1.6", "1.7"), ("2.2", "2.3", "2.4")

# name: (releases, root config.toml, handlers served when CRI runs, or None when the CRI plugin must refuse)
CASES = {
    "default-runtime-name-empty-1x": (ONE_X, V2 + CD2 + '  default_runtime_name = ""\n', None),
    "default-runtime-name-empty-2x": (TWO_X, V3 + '[plugins."io.containerd.cri.v1.runtime".containerd]\n  default_runtime_name = ""\n', None),
    "default-runtime-unknown-2x": (TWO_X, V3 + '[plugins."io.containerd.cri.v1.runtime".containerd]\n  default_runtime_name = "nvidia"\n', None),
    "deprecated-default-runtime-table": (ONE_X, V2 + '[plugins."io.containerd.grpc.v1.cri".containerd.default_runtime]\n'
                                         '  runtime_type = "io.containerd.runc.v2"\n', ["default", "runc"]),
    "untrusted-workload-runtime": (ONE_X, V2 + '[plugins."io.containerd.grpc.v1.cri".containerd.untrusted_workload_runtime]\n'
                                   '  runtime_type = "io.containerd.runc.v2"\n', ["runc", "untrusted"]),
    "untrusted-workload-runtime-conflict": (ONE_X, V2 + '[plugins."io.containerd.grpc.v1.cri".containerd.untrusted_workload_runtime]\n'
                                            '  runtime_type = "io.containerd.runc.v2"\n'
                                            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.untrusted]\n'
                                            '  runtime_type = "io.containerd.runc.v2"\n', None),
    "systemd-cgroup-with-runc-v2": (ONE_X, V2 + CRI2 + "  systemd_cgroup = true\n", None),
    "runtime-engine-with-runc-v2": (ONE_X, V2.replace('"io.containerd.runc.v2"\n', '"io.containerd.runc.v2"\n  runtime_engine = "x"\n'), None),
    "privileged-pair-2x": (TWO_X, V3 + "  privileged_without_host_devices_all_devices_allowed = true\n", None),
    "privileged-pair-1-7": (("1.7",), V2.replace('"io.containerd.runc.v2"\n', '"io.containerd.runc.v2"\n'
                                                 '  privileged_without_host_devices_all_devices_allowed = true\n'), None),
    "io-type-unknown": (TWO_X, V3 + '  io_type = "pipe"\n', None),
    "stream-idle-timeout-invalid": (ONE_X, V2 + CRI2 + '  stream_idle_timeout = "soon"\n', None),
    "drain-timeout-invalid-2x": (TWO_X, V3 + '[plugins."io.containerd.cri.v1.runtime"]\n  drain_exec_sync_io_timeout = "later"\n', None),
    "mirrors-with-config-path-1x": (ONE_X, V2 + '[plugins."io.containerd.grpc.v1.cri".registry]\n  config_path = "/etc/containerd/certs.d"\n'
                                    '[plugins."io.containerd.grpc.v1.cri".registry.mirrors."docker.io"]\n  endpoint = ["https://m.example"]\n', None),
    "mirrors-with-config-path-2x": (TWO_X, V3 + IMAGES3 + '[plugins."io.containerd.cri.v1.images".registry]\n  config_path = "/etc/containerd/certs.d"\n'
                                    '[plugins."io.containerd.cri.v1.images".registry.mirrors."docker.io"]\n  endpoint = ["https://m.example"]\n', None),
    "snapshotter-unknown-1x": (ONE_X, V2 + CD2 + '  snapshotter = "nosuch"\n', None),
    "snapshotter-disabled-1x": (ONE_X, 'disabled_plugins = ["io.containerd.snapshotter.v1.overlayfs"]\n' + V2, None),
    "snapshotter-native-1x": (ONE_X, V2 + CD2 + '  snapshotter = "native"\n', ["runc"]),
    "snapshotter-unknown-2x": (TWO_X, V3 + IMAGES3 + '  snapshotter = "nosuch"\n', None),
    "overlayfs-disabled-native-images-2x": (TWO_X, 'disabled_plugins = ["io.containerd.snapshotter.v1.overlayfs"]\n' + V3 + IMAGES3
                                            + '  snapshotter = "native"\n', None),
    "transfer-disabled-2x": (TWO_X, 'disabled_plugins = ["io.containerd.transfer.v1.local"]\n' + V3, None),
    "images-plugin-disabled-2x": (TWO_X, 'disabled_plugins = ["io.containerd.cri.v1.images"]\n' + V3, None),
    # 1.x matches disabled_plugins by plugin ID under a version 1 root (no version line), by URI under version 2.
    "cri-id-disabled-unversioned-1x": (ONE_X, 'disabled_plugins = ["cri"]\n', None),
    "cri-uri-disabled-unversioned-1x": (ONE_X, 'disabled_plugins = ["io.containerd.grpc.v1.cri"]\n', ["runc"]),
    # (A version 2 root naming "cri" is refused whole, daemon and `config dump` alike: "invalid disabled plugin URI".)
    "cri-uri-disabled-version-2-1x": (ONE_X, 'disabled_plugins = ["io.containerd.grpc.v1.cri"]\n' + V2, None),
    "overlayfs-id-disabled-unversioned-1x": (ONE_X, 'disabled_plugins = ["overlayfs"]\n', None),
    "empty-runtime-type-listed-not-served": (ONE_X + TWO_X, V3 + '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.kata]\n'
                                             '  runtime_type = ""\n', ["runc"]),
}


def _cases():
    return [pytest.param(name, release, id=f"{name}-{release}") for name, (names, _text, _served) in CASES.items() for release in names]


def _release(name):
    return next(release for release in releases() if release.name == name)


@pytest.mark.parametrize("case, release_name", _cases())
def test_the_daemon_and_the_verdict_agree_on_the_cri_plugin(case, release_name):
    names, text, expected = CASES[case]
    if release_name in ONE_X and "version = 3" in text:
        # The same runtimes written as 1.x reads them.
        text = text.replace("version = 3", "version = 2").replace("io.containerd.cri.v1.runtime", "io.containerd.grpc.v1.cri")
    release = _release(release_name)
    node_root = Path(tempfile.mkdtemp(prefix="rule-"))
    try:
        (node_root / "etc" / "containerd").mkdir(parents=True)
        (node_root / "etc" / "containerd" / "config.toml").write_text(text, encoding="utf-8")
        daemon = start_daemon(release, node_root)
        try:
            truth = served_by_daemon(daemon, crictl())
        finally:
            remove_daemon(daemon)
        dumped = config_dump(release, node_root)
    finally:
        shutil.rmtree(node_root, ignore_errors=True)
    assert truth["running"], f"containerd {release} refused the file itself: {truth['error']}"
    assert (truth["served"] if truth["cri"] else None) == expected, f"containerd {release} on {case}: {truth}"
    assert dumped.returncode == 0, dumped.stderr
    # The root file's own version is read as containerd_facts reads it (on 1.x it decides how disabled_plugins matches).
    root_config = root_config_summary(text, "/etc/containerd/config.toml")
    facts = facts_from_dump(dumped.stdout, source="file", source_name="the dump", root_config=root_config)
    verdict = judge_and_explain(facts, [], node_name="node", node_labels={})
    alone = judge(facts_from_dump(dumped.stdout, source="file", source_name="the dump"), [], node_name="node", node_labels={})
    if 'disabled_plugins = ["io.containerd.' in text and release_name in ONE_X:
        # The 1.x dump prints version = 2 and the list as written whatever the root said: alone, it cannot decide a URI
        # (an entry that is no URI can only come from a version 1 root, which decides it).
        assert alone["status"] == "UNKNOWN" and "judge it with the node's root config" in alone["reason"], alone
    else:
        assert alone["loaded_runtimes"] == verdict["loaded_runtimes"]
    if expected is None:
        assert verdict["loaded_runtimes"] == [], verdict["reason"]
        # A default naming no runtime has its own code; every other refusal is CRI_PLUGIN_FAILS.
        reason = "DEFAULT_RUNTIME_UNDEFINED" if case.startswith("default-runtime-unknown") else "CRI_PLUGIN_FAILS"
        assert reason in {finding["code"] for finding in verdict["findings"]}, verdict["findings"]
    else:
        assert verdict["loaded_runtimes"] == expected, verdict["notes"]
