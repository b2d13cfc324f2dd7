"""One case per row of the findings table (issue 4), each built from a real config tree.

1.x rows: trees in a temp dir (imports written as absolute temp paths), dumped by the real Debian
containerd 1.6.20 and gathered by the real node code (``containerd_facts.gather`` +
``gather_surroundings``, then ``NodeFacts.from_evidence``). 2.x rows: a scenario tree of tests/fixtures/containerd
(changed as each row needs), dumped at test time by the real 2.2.9/2.3.4 binary (support.containerd_trees) and
gathered by the same node code on a node root of its own (host_root: the tree at <root>/etc/containerd, stand-ins
for the runtime binaries) with the version of the binary that printed the dump.
PENDING_RESTART: a real daemon of every release runs a tree that is then edited without a restart, and the node
code asks it with the real crictl. Every row is also shown silent on the healthy demo node gpu-node-01
(test_findings_demo.py).
"""
import shutil

import pytest
from support.containerd_daemons import containerd_wrapper, crictl, remove_daemon, start_daemon
from support.containerd_trees import copy_tree, dump_node, release_named, scenario_etc
from support.judged import runtimeclass
from support.judged_trees import (
    CLASSES,
    NODE_BINARIES,
    V2_FULL_DROPIN,
    V2_ROOT_RUNC,
    codes,
    facts_at_etc,
    gathered_facts,
    line_of,
    only,
    read_as_release,
    real_dump_facts,
    verdict_of,
    write_tree,
)
from support.paths import REPO_ROOT

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.vocabulary import MISSING, OK

# ------------------------------------------------------------------------------------------- 1.x rows


@pytest.mark.components
def test_import_glob_matches_nothing(tmp_path):
    config = write_tree(tmp_path, {"config.toml": V2_ROOT_RUNC.format(imports='"{d}/conf.d/*.conf"'),
                                   "conf.d/99-nvidia.toml": V2_FULL_DROPIN})
    verdict = verdict_of(gathered_facts(config))
    assert verdict["lines"] == ["MISSING=nvidia", "MISSING=nvidia-cdi"]
    finding = only(verdict, "IMPORT_GLOB_MATCHES_NOTHING")
    assert finding["severity"] == "error" and finding["handlers"] == ["nvidia", "nvidia-cdi"]
    assert finding["evidence"]["pattern"] == f"{tmp_path}/conf.d/*.conf"
    assert (finding["evidence"]["file"], finding["evidence"]["line"]) == (str(config), 2)
    assert finding["evidence"]["files_in_directory"] == ["99-nvidia.toml"]
    assert finding["evidence"]["containerd_version"] == "1.6.20"
    assert "IMPORT_GLOB_MATCHES_NOTHING" in verdict["missing_explained"]["nvidia"]


@pytest.mark.components
def test_dropin_not_imported(tmp_path):
    # The glob loads 10-runc.toml; 99-nvidia.conf sits next to it and matches no pattern.
    config = write_tree(tmp_path, {"config.toml": V2_ROOT_RUNC.format(imports='"{d}/conf.d/*.toml"'),
                                   "conf.d/10-runc.toml": V2_ROOT_RUNC.format(imports=""),
                                   "conf.d/99-nvidia.conf": V2_FULL_DROPIN})
    verdict = verdict_of(gathered_facts(config, dropin_dirs=[str(tmp_path / "conf.d")]))
    assert verdict["missing_handlers"] == ["nvidia", "nvidia-cdi"]
    finding = only(verdict, "DROPIN_NOT_IMPORTED")
    assert finding["evidence"]["file"] == f"{tmp_path}/conf.d/99-nvidia.conf"
    assert finding["evidence"]["patterns"] == [f"{tmp_path}/conf.d/*.toml"]
    assert finding["handlers"] == ["nvidia", "nvidia-cdi"] and finding["severity"] == "error"
    assert "IMPORT_GLOB_MATCHES_NOTHING" not in codes(verdict)


@pytest.mark.components
def test_unloaded_dropin_explains_only_the_handlers_it_defines(tmp_path):
    # 99-nvidia.toml defines nvidia and nvidia-cdi, never the typo'd nvdia: the node sends its text, so the
    # findings link exactly; without that text (older facts) they fall back to inferring every unmentioned one.
    config = write_tree(tmp_path, {"config.toml": V2_ROOT_RUNC.format(imports='"{d}/conf.d/*.conf"'),
                                   "conf.d/99-nvidia.toml": V2_FULL_DROPIN})
    classes = CLASSES + [runtimeclass("nvidia-typo", "nvdia")]
    facts = gathered_facts(config, dropin_dirs=[str(tmp_path / "conf.d")])
    verdict = verdict_of(facts, classes)
    assert verdict["missing_handlers"] == ["nvdia", "nvidia", "nvidia-cdi"]
    both = ["DROPIN_NOT_IMPORTED", "IMPORT_GLOB_MATCHES_NOTHING"]
    assert verdict["missing_explained"] == {"nvdia": ["NOT_CONFIGURED_ANYWHERE"], "nvidia": both, "nvidia-cdi": both}
    assert [(finding["code"], finding["handlers"]) for finding in verdict["findings"]] == [
        (code, ["nvidia", "nvidia-cdi"]) for code in both]

    for listing in facts["dropin_dirs"]:
        del listing["texts_for"]
        for entry in listing["entries"]:
            entry.pop("text", None)
            entry.pop("text_error", None)
    older = verdict_of(facts, classes)
    assert older["missing_explained"] == {"nvdia": both, "nvidia": both, "nvidia-cdi": both}


@pytest.mark.components
def test_relative_import_glob(tmp_path, monkeypatch):
    # containerd 1.6.20 resolves "conf.d/*.toml" from its working directory: `/` under systemd.
    monkeypatch.chdir("/")
    config = write_tree(tmp_path, {"config.toml": V2_ROOT_RUNC.format(imports='"conf.d/*.toml"'),
                                   "conf.d/99-nvidia.toml": V2_FULL_DROPIN})
    verdict = verdict_of(gathered_facts(config))
    assert verdict["missing_handlers"] == ["nvidia", "nvidia-cdi"]  # the real dump loaded no drop-in
    finding = only(verdict, "RELATIVE_IMPORT_GLOB")
    assert finding["evidence"]["matches"] == [f"{tmp_path}/conf.d/99-nvidia.toml"]
    assert finding["evidence"]["matches_from_cwd"] == []
    assert finding["handlers"] == ["nvidia", "nvidia-cdi"] and finding["evidence"]["line"] == 2
    assert verdict["missing_explained"]["nvidia"] == ["RELATIVE_IMPORT_GLOB"]


@pytest.mark.components
def test_relative_import_glob_is_version_gated(tmp_path, monkeypatch):
    monkeypatch.chdir("/")
    config = write_tree(tmp_path, {"config.toml": V2_ROOT_RUNC.format(imports='"conf.d/*.toml"'),
                                   "conf.d/99-nvidia.toml": V2_FULL_DROPIN})
    facts = gathered_facts(config)
    # The same evidence read as another release: fixed in 1.6.29 / 1.7.16 (PRs #9835, #9834).
    for version, fires in (("1.6.28", True), ("1.6.29", False), ("1.7.15", True), ("1.7.16", False), ("2.0.0", False)):
        read_as_release(facts, version)
        assert ("RELATIVE_IMPORT_GLOB" in codes(verdict_of(facts))) is fires, version


@pytest.mark.components
def test_files_a_relative_glob_never_loaded_explain_nothing_else(tmp_path, monkeypatch):
    # gpu-node-04's partial drop-in behind a relative glob: 1.6.20 never loads it, so it replaced nothing.
    monkeypatch.chdir("/")
    dropin = (REPO_ROOT / "inventory/demo/nodes/gpu-node-04/etc/containerd/conf.d/99-nvidia.toml").read_text()
    config = write_tree(tmp_path, {"config.toml": V2_ROOT_RUNC.format(imports='"conf.d/*.toml"'), "conf.d/99-nvidia.toml": dropin})
    facts = gathered_facts(config)
    assert codes(verdict_of(facts)) == {"RELATIVE_IMPORT_GLOB"}
    read_as_release(facts, "1.6.29")  # the same files read by a release that loads the drop-in
    assert "CRI_TABLE_REPLACED" in codes(verdict_of(facts))


V3_ROOT = (REPO_ROOT / "inventory/demo/nodes/gpu-node-05/etc/containerd/config.toml").read_text()


@pytest.mark.components
def test_v3_config_on_1x(tmp_path):
    config = write_tree(tmp_path, {"config.toml": V3_ROOT})
    verdict = verdict_of(gathered_facts(config))
    assert verdict["missing_handlers"] == ["nvidia", "nvidia-cdi"]
    finding = only(verdict, "V3_CONFIG_ON_1X")
    assert finding["evidence"]["outcome"] == "ignored" and finding["evidence"]["line"] == 1
    assert finding["handlers"] == ["nvidia", "nvidia-cdi"]


@pytest.mark.parametrize("version, outcome", [("1.6.31", "ignored"), ("1.6.32", "refused"), ("1.7.16", "ignored"), ("1.7.17", "refused")])
@pytest.mark.components
def test_v3_config_on_1x_gates(tmp_path, version, outcome):
    facts = gathered_facts(write_tree(tmp_path, {"config.toml": V3_ROOT}))
    read_as_release(facts, version)  # the same files read as that release
    assert only(verdict_of(facts), "V3_CONFIG_ON_1X")["evidence"]["outcome"] == outcome


@pytest.mark.components
def test_cri_table_replaced(tmp_path):
    dropin = (REPO_ROOT / "inventory/demo/nodes/gpu-node-04/etc/containerd/conf.d/99-nvidia.toml").read_text()
    config = write_tree(tmp_path, {"config.toml": V2_ROOT_RUNC.format(imports='"{d}/conf.d/*.toml"'), "conf.d/99-nvidia.toml": dropin})
    verdict = verdict_of(gathered_facts(config))
    assert verdict["lines"] == ["MISSING=nvidia", "MISSING=nvidia-cdi", "MISSING=runc"]
    finding = only(verdict, "CRI_TABLE_REPLACED")
    assert finding["evidence"]["replaced_file"] == str(config)
    assert finding["evidence"]["file"] == f"{tmp_path}/conf.d/99-nvidia.toml"
    assert finding["evidence"]["dropped_runtimes"] == ["runc"]
    assert finding["evidence"]["line"] == line_of(tmp_path / "conf.d/99-nvidia.toml", "runtimes.nvidia]")
    assert set(verdict["missing_explained"]["runc"]) == {"CRI_TABLE_REPLACED", "DEFAULT_RUNTIME_UNDEFINED"}


@pytest.mark.components
def test_default_runtime_undefined(tmp_path):
    # One file, only `nvidia`: go-toml v1 replaces the runtimes map, so the built-in runc is gone too.
    config = write_tree(tmp_path, {"config.toml": 'version = 2\n\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
                                                  '  runtime_type = "io.containerd.runc.v2"\n'})
    verdict = verdict_of(gathered_facts(config))
    assert verdict["missing_handlers"] == ["nvidia", "nvidia-cdi", "runc"] and verdict["loaded_runtimes"] == []
    finding = only(verdict, "DEFAULT_RUNTIME_UNDEFINED")
    assert finding["severity"] == "error" and finding["evidence"]["default_runtime"] == "runc"
    assert finding["evidence"]["loaded_runtimes"] == ["nvidia"] and finding["evidence"]["file"] == "(built-in default)"
    assert finding["handlers"] == ["nvidia", "nvidia-cdi", "runc"]


@pytest.mark.components
def test_runtime_type_missing(tmp_path):
    config = write_tree(tmp_path, {"config.toml": V2_FULL_DROPIN.replace('  runtime_type = "io.containerd.runc.v2"\n  [plugins', '  [plugins', 1)})
    verdict = verdict_of(gathered_facts(config))
    finding = only(verdict, "RUNTIME_TYPE_MISSING")
    assert finding["handlers"] == ["nvidia"] and finding["evidence"]["runtime"] == "nvidia"
    assert finding["evidence"]["line"] == line_of(config, "runtimes.nvidia]")


@pytest.mark.components
def test_runtime_binary_missing(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin/nvidia-container-runtime.cdi").write_text("#!/bin/sh\n")  # present, mode 0644: not executable
    config = write_tree(tmp_path, {"config.toml": V2_FULL_DROPIN.replace('"/usr/sbin/runc"', '"{d}/bin/nvidia-container-runtime"', 1)
                                   .replace('"/usr/sbin/runc"', '"{d}/bin/nvidia-container-runtime.cdi"')})
    verdict = verdict_of(gathered_facts(config))
    # Loaded by containerd, but a runtime whose binary cannot run serves nothing.
    assert verdict["configured_runtimes"] == ["nvidia", "nvidia-cdi", "runc"]
    assert verdict["lines"] == ["MISSING=nvidia", "MISSING=nvidia-cdi"]
    findings = {finding["evidence"]["runtime"]: finding for finding in verdict["findings"] if finding["code"] == "RUNTIME_BINARY_MISSING"}
    assert "does not exist" in findings["nvidia"]["message"] and "is not executable" in findings["nvidia-cdi"]["message"]
    assert findings["nvidia"]["evidence"]["line"] == line_of(config, "nvidia-container-runtime\"")
    assert verdict["missing_explained"] == {"nvidia": ["RUNTIME_BINARY_MISSING"], "nvidia-cdi": ["RUNTIME_BINARY_MISSING"]}


@pytest.mark.components
def test_unknown_option_key(tmp_path):
    config = write_tree(tmp_path, {"config.toml": V2_FULL_DROPIN.replace('BinaryName = "/usr/sbin/runc"', 'binary_name = "/usr/sbin/runc"', 1)})
    verdict = verdict_of(gathered_facts(config))
    assert verdict["status"] == OK  # loaded, and silently runs plain runc
    finding = only(verdict, "UNKNOWN_OPTION_KEY")
    assert finding["evidence"]["option"] == "binary_name" and finding["evidence"]["runtime"] == "nvidia"
    assert (finding["evidence"]["file"], finding["evidence"]["line"]) == (str(config), line_of(config, "binary_name"))


@pytest.mark.components
def test_cdi_spec_missing(tmp_path):
    (tmp_path / "cdi").mkdir()
    config = write_tree(tmp_path, {"config.toml": V2_FULL_DROPIN})
    cdi_dirs = [str(tmp_path / "cdi"), str(tmp_path / "run-cdi")]
    verdict = verdict_of(gathered_facts(config, cdi_spec_dirs=cdi_dirs))
    finding = only(verdict, "CDI_SPEC_MISSING")
    assert finding["handlers"] == ["nvidia-cdi"] and finding["evidence"]["cdi_dirs"] == cdi_dirs
    (tmp_path / "cdi/nvidia.yaml").write_text("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: []\n")
    assert "CDI_SPEC_MISSING" not in codes(verdict_of(gathered_facts(config, cdi_spec_dirs=cdi_dirs)))


@pytest.mark.components
def test_legacy_plugin_key_in_an_unversioned_1x_config(tmp_path):
    # No `version`: containerd 1.6.20 reads plugins.cri only, and the real dump shows just the built-in runc.
    config = write_tree(tmp_path, {"config.toml": V2_FULL_DROPIN.replace("version = 2\n", "")})
    verdict = verdict_of(gathered_facts(config))
    assert verdict["missing_handlers"] == ["nvidia", "nvidia-cdi"]
    finding = only(verdict, "LEGACY_PLUGIN_KEY")
    assert finding["handlers"] == ["nvidia", "nvidia-cdi"] and "config_version" not in finding["evidence"]
    assert finding["evidence"]["line"] == line_of(config, "runtimes.runc]")


# ------------------------------------------------------------------------------------------- 2.x rows

S1_DROPIN = (scenario_etc("S1") / "conf.d/99-nvidia.toml").read_text()
S1V4_DROPIN = (scenario_etc("S1v4") / "conf.d/99-nvidia.toml").read_text()


@pytest.mark.components
def test_confd_not_imported(tmp_path):
    # S6 (one root file without imports) plus S1's drop-in in conf.d, dumped by the real 2.2.9: the drop-in is not
    # loaded (no nvidia-cdi), and the dump still lists the built-in pattern, so the dump's imports prove nothing.
    dump, facts = real_dump_facts(tmp_path, "S6", "2.2", {"conf.d/99-nvidia.toml": S1_DROPIN})
    assert "imports = ['/etc/containerd/conf.d/*.toml']" in dump.text
    assert sorted(facts["runtimes"]) == ["nvidia", "runc"]
    verdict = verdict_of(facts)
    assert verdict["missing_handlers"] == ["nvidia-cdi"]
    finding = only(verdict, "CONFD_NOT_IMPORTED")
    assert finding["evidence"]["file"] == "/etc/containerd/conf.d/99-nvidia.toml"
    assert finding["evidence"]["root"] == "/etc/containerd/config.toml" and finding["handlers"] == ["nvidia-cdi"]
    assert "DROPIN_NOT_IMPORTED" not in codes(verdict)
    # containerd 2.0/2.1 never had the default pattern (no such binary is built here): the same evidence read as
    # 2.1 is a plain unimported drop-in.
    read_as_release(facts, "2.1.5")
    assert "CONFD_NOT_IMPORTED" not in codes(verdict_of(facts))


LEGACY_TABLE = """
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia-cdi]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia-cdi.options]
    BinaryName = "/usr/bin/nvidia-container-runtime.cdi"
"""
S6_WITH_LEGACY_TABLE = (scenario_etc("S6") / "config.toml").read_text() + LEGACY_TABLE


@pytest.mark.components
def test_legacy_plugin_key(tmp_path):
    # S6 (version = 3) plus nvidia-cdi under the old grpc key, dumped by the real 2.2.9: ignored with a journal
    # warning, the loaded runtimes are S6's (runc, nvidia).
    dump, facts = real_dump_facts(tmp_path, "S6", "2.2", {"config.toml": S6_WITH_LEGACY_TABLE})
    assert sorted(facts["runtimes"]) == ["nvidia", "runc"]
    verdict = verdict_of(facts)
    assert verdict["missing_handlers"] == ["nvidia-cdi"]
    finding = only(verdict, "LEGACY_PLUGIN_KEY")
    assert finding["evidence"]["runtimes"] == ["nvidia-cdi"] and finding["evidence"]["config_version"] == 3
    assert finding["evidence"]["line"] == line_of(dump.etc / "config.toml", 'grpc.v1.cri".containerd.runtimes.nvidia-cdi]')
    assert verdict["missing_explained"] == {"nvidia-cdi": ["LEGACY_PLUGIN_KEY"]}


@pytest.mark.components
def test_legacy_plugin_key_on_2_3(tmp_path):
    # A version = 3 file on 2.3 is migrated on its own (PR #12608), but the migration copies the old runtimes table only
    # where the new one is absent (PR #10980): beside runtimes under io.containerd.cri.v1.runtime, the real 2.3.4 drops
    # the old key's nvidia-cdi, and LEGACY_PLUGIN_KEY says why.
    dump, facts = real_dump_facts(tmp_path / "v3", "S6", "2.3", {"config.toml": S6_WITH_LEGACY_TABLE})
    assert facts["dump_version"] == 4 and sorted(facts["runtimes"]) == ["nvidia", "runc"], "what 2.3.4 loads"
    verdict = verdict_of(facts)
    assert verdict["missing_handlers"] == ["nvidia-cdi"]
    finding = only(verdict, "LEGACY_PLUGIN_KEY")
    assert (finding["evidence"]["runtimes"], finding["evidence"]["config_version"]) == (["nvidia-cdi"], 3)
    assert finding["handlers"] == ["nvidia-cdi"] and "drops while migrating" in finding["message"]
    assert verdict["missing_explained"] == {"nvidia-cdi": ["LEGACY_PLUGIN_KEY"]}
    # A version = 4 file is not migrated at all: its old-key runtime is ignored.
    dump, facts = real_dump_facts(tmp_path / "v4", "S1v4", "2.3",
                                  {"conf.d/99-nvidia.toml": S1V4_DROPIN + LEGACY_TABLE.replace("nvidia-cdi", "nvidia-legacy")})
    assert sorted(facts["runtimes"]) == ["nvidia", "nvidia-cdi", "runc"], "what 2.3.4 loads"
    finding = only(verdict_of(facts), "LEGACY_PLUGIN_KEY")
    assert (finding["evidence"]["runtimes"], finding["evidence"]["config_version"]) == (["nvidia-legacy"], 4)
    assert "ignores for this config version" in finding["message"]


@pytest.mark.components
def test_mixed_config_versions(tmp_path):
    # Root version 2 (S3full's) + version 3 drop-in (S1's) on 2.2.9: merged version 3, no CRI migration, the root's
    # runc table is ignored (runc is still served: 2.x has it built in), as the real dump shows.
    _dump, facts = real_dump_facts(tmp_path, "S3full", "2.2", {"conf.d/99-nvidia.toml": S1_DROPIN})
    assert sorted(facts["runtimes"]) == ["nvidia", "nvidia-cdi", "runc"]
    verdict = verdict_of(facts)
    assert verdict["status"] == OK
    finding = only(verdict, "MIXED_CONFIG_VERSIONS")
    assert finding["severity"] == "warning"
    assert (finding["evidence"]["root_version"], finding["evidence"]["config_version"]) == (2, 3)
    assert finding["evidence"]["lost_runtimes"] == ["runc"]


@pytest.mark.components
def test_mixed_config_versions_refused_on_2_3(tmp_path):
    # 2.3.0-2.3.4 refuse a drop-in newer than the root (PR #12891): the real 2.3.4 refuses even to dump S1 with S1v4's
    # drop-in. The node's daemon still runs what it loaded before the drop-in changed: S1, dumped by the same binary.
    release = release_named("2.3")
    edited = copy_tree("S1", tmp_path / "edited", {"conf.d/99-nvidia.toml": S1V4_DROPIN})
    refused = dump_node(release, edited)
    assert refused.returncode != 0 and refused.text == ""
    assert "drop-in config version 4 higher than root config version 3" in refused.stderr
    before = dump_node(release, copy_tree("S1", tmp_path / "before"))
    assert before.returncode == 0, before.stderr
    finding = only(verdict_of(facts_at_etc(edited / "etc" / "containerd", before.path, release.version)), "MIXED_CONFIG_VERSIONS")
    assert finding["severity"] == "error" and "refuses to start" in finding["message"]
    assert (finding["evidence"]["root_version"], finding["evidence"]["config_version"]) == (3, 4)


@pytest.mark.components
def test_default_runtime_not_runc(tmp_path):
    _dump, facts = real_dump_facts(tmp_path, "S5", "2.2")
    assert facts["default_runtime_name"] == "nvidia"
    verdict = verdict_of(facts)
    assert verdict["status"] == OK
    finding = only(verdict, "DEFAULT_RUNTIME_NOT_RUNC")
    assert {key: finding["evidence"][key] for key in ("DEFAULT_RUNTIME", "AFFECTED", "NEEDS_RUNTIMECLASS", "BLAST_RADIUS")} == {
        "DEFAULT_RUNTIME": "nvidia", "AFFECTED": "all", "NEEDS_RUNTIMECLASS": "no", "BLAST_RADIUS": "node"}
    assert (finding["evidence"]["file"], finding["evidence"]["line"]) == ("/etc/containerd/conf.d/50-default.toml", 4)


# The tree each release's daemon runs: 1.x loads S3full (version 2), 2.x S1 (version 3, migrated to 4 on 2.3+).
PENDING_RESTART_TREES = {"1.6": "S3full", "1.7": "S3full", "2.2": "S1", "2.3": "S1", "2.4": "S1"}


@pytest.fixture
def running_daemon():
    """``running_daemon(release, node_root)``: a real daemon on the node's tree (support.containerd_daemons), removed after."""
    started = []

    def start(release, node_root):
        daemon = start_daemon(release, node_root)
        started.append(daemon)
        assert daemon.running(), daemon.log()[-3000:]
        return daemon

    yield start
    for daemon in started:
        remove_daemon(daemon)


@pytest.mark.parametrize("release_name", sorted(PENDING_RESTART_TREES))
@pytest.mark.components
def test_pending_restart(tmp_path, running_daemon, release_name):
    # nvidia-cdi deleted from the drop-in without a restart: the dump of the files lacks it, the daemon still serves it.
    release, scenario = release_named(release_name), PENDING_RESTART_TREES[release_name]
    node_root = copy_tree(scenario, tmp_path / "node")
    for binary in NODE_BINARIES:  # the daemon starts no container: the node code only stats them
        (node_root / binary).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy("/bin/true", node_root / binary)
    daemon = running_daemon(release, node_root)
    shutil.copy(scenario_etc(f"{scenario}-after-edit") / "conf.d" / "99-nvidia.toml",
                node_root / "etc" / "containerd" / "conf.d" / "99-nvidia.toml")
    # As production gathers on a node whose root is elsewhere: containerd (through the containerd-at-etc wrapper) dumps
    # the edited files, the real crictl asks the running daemon.
    facts = gathered_facts("/etc/containerd/config.toml", containerd_bin=containerd_wrapper(release, tmp_path),
                           host_root=str(node_root), ask_daemon=True, socket=str(daemon.socket), crictl_bin=crictl(),
                           dropin_dirs=["/etc/containerd/conf.d"])
    assert (facts["source"], facts["containerd_version"]) == ("command", release.version)
    assert (facts["daemon"]["state"], facts["daemon"]["source"]) == ("serving", "crictl"), facts["daemon"]
    verdict = verdict_of(facts)
    assert verdict["loaded_source"] == "daemon" and verdict["daemon_runtimes"] == ["nvidia", "nvidia-cdi", "runc"]
    assert verdict["status"] == OK
    finding = only(verdict, "PENDING_RESTART")
    assert finding["evidence"]["only_in_daemon"] == ["nvidia-cdi"] and finding["evidence"]["dump_runtimes"] == ["nvidia", "runc"]
    assert daemon.running()
    # Seen the other way (the daemon lost what the files now define), the handler is missing: an error.
    facts["daemon"]["runtimes"] = ["runc"]
    verdict = verdict_of(facts)
    assert verdict["missing_handlers"] == ["nvidia", "nvidia-cdi"]
    assert only(verdict, "PENDING_RESTART")["severity"] == "error"
    assert verdict["missing_explained"]["nvidia"] == ["PENDING_RESTART"]


def test_rows_are_silent_without_evidence():
    # Older facts (no config_files, import_globs, binaries, cdi_dirs, daemon): only dump-based rules can fire.
    dump = (REPO_ROOT / "inventory/demo/nodes/gpu-node-02/config-dump.toml").read_text()
    from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import facts_from_dump

    verdict = verdict_of(facts_from_dump(dump, source="file", source_name="dump", version_text="1.6.20"))
    assert verdict["status"] == MISSING and verdict["findings"] == []
    # Without the files, "not configured anywhere" cannot be claimed: the handlers stay unexplained.
    assert verdict["missing_explained"] == {"nvidia": [], "nvidia-cdi": []}
