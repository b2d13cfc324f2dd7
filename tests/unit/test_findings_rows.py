"""One case per row of the findings table (issue 4), each built from a real config tree.

1.x rows: trees in a temp dir (imports written as absolute temp paths), dumped by the real Debian
containerd 1.6.20 and gathered by the real node code (``containerd_facts.gather`` +
``gather_surroundings``, then ``facts_from_evidence``). 2.x rows: the real 2.0.6/2.2.0/2.3.4 dumps and
trees of shared/fixtures/containerd, gathered by the same node code with the tree bind-mounted at
/etc/containerd in a private mount namespace (as inventory/demo/bin/containerd-at-etc does); the
containerd version is the one that produced the fixture dump. Every row is also shown silent on the
healthy demo node gpu-node-01 (test_findings_demo.py).
"""
import json
import os
import shutil
import subprocess
import sys

import pytest
from support.paths import COLLECTIONS_ROOT, REPO_ROOT, SHARED_FIXTURES
from support.tools import require_tool

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._containerd_config import facts_from_evidence
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._verdict import MISSING, OK, judge
from ansible_collections.gpufleet.runtime_gate.plugins.modules.containerd_facts import gather, gather_surroundings

CONTAINERD = "/usr/bin/containerd"
GPU_LABELS = {"nvidia.com/gpu.present": "true", "gpufleet.example/pool": "main"}


def runtimeclass(name, handler=None, node_selector=None):
    return {"name": name, "handler": handler or name, "overhead_pod_fixed": None, "node_selector": node_selector, "tolerations": []}


CLASSES = [runtimeclass("nvidia"), runtimeclass("nvidia-cdi", node_selector={"nvidia.com/gpu.present": "true"})]

V2_ROOT_RUNC = """\
version = 2
imports = [{imports}]

[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
"""
V2_FULL_DROPIN = """\
version = 2

[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
    BinaryName = "/usr/sbin/runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia-cdi]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia-cdi.options]
    BinaryName = "/usr/sbin/runc"
"""


def params(config_path, **overrides):
    values = {"containerd_bin": CONTAINERD, "config_path": str(config_path), "dump_file": None, "timeout": 60,
              "dropin_dirs": [], "cdi_spec_dirs": [], "daemon": False, "socket": "/nonexistent/containerd.sock",
              "crictl_bin": "crictl"}
    values.update(overrides)
    return values


def gathered_facts(config_path, **overrides):
    """Facts as production makes them: node module gather + surroundings, then the controller's parse."""
    require_tool(os.access(CONTAINERD, os.X_OK), f"{CONTAINERD} is not installed (apt-get install containerd)")
    module_params = params(config_path, **overrides)
    evidence, error = gather(module_params)
    assert error is None, error
    return facts_from_evidence(gather_surroundings(module_params, evidence))


def write_tree(base, files):
    """Write ``{relative path: text}`` under ``base``; ``{d}`` in a text is the tree's absolute path."""
    for relative, text in files.items():
        path = base / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace("{d}", str(base)))
    return base / "config.toml"


_AT_ETC_SCRIPT = """
import json, subprocess, sys
sys.path.insert(0, sys.argv[1])
subprocess.run(["mount", "--bind", sys.argv[2], "/etc/containerd"], check=True)
from ansible_collections.gpufleet.runtime_gate.plugins.modules.containerd_facts import gather, gather_surroundings
params = json.loads(sys.argv[3])
evidence, error = gather(params)
print(json.dumps(gather_surroundings(params, evidence) if evidence else {"error": error}))
"""


def facts_at_etc(tree, dump_file, containerd_version, **overrides):
    """Facts for a tree that lies at /etc/containerd on its node, judged from a captured dump.

    The node code runs in a private mount namespace with ``tree`` bind-mounted at /etc/containerd, so
    absolute node paths in ``imports`` resolve inside the tree; nothing changes on this machine.
    """
    require_tool(os.geteuid() == 0 and shutil.which("unshare") and os.path.isdir("/etc/containerd"),
                 "needs root, unshare and an /etc/containerd mount point for a private bind mount")
    module_params = params("/etc/containerd/config.toml", dump_file=str(dump_file), containerd_bin="/nonexistent/containerd",
                           dropin_dirs=["/etc/containerd/conf.d"], **overrides)
    completed = subprocess.run(["unshare", "--mount", sys.executable, "-c", _AT_ETC_SCRIPT, str(COLLECTIONS_ROOT), str(tree),
                                json.dumps(module_params)], capture_output=True, text=True, check=True, cwd="/")
    evidence = json.loads(completed.stdout)
    assert "error" not in evidence, evidence
    facts = facts_from_evidence(evidence)
    # The version of the containerd that printed the fixture dump (fixtures/containerd/<version>/).
    facts["containerd_version"] = containerd_version
    return facts


def fixture_tree(tmp_path, version, scenario, extra=None):
    """A copy of a fixture's etc/containerd tree, with ``extra`` files written into it."""
    tree = tmp_path / "etc-containerd"
    shutil.copytree(SHARED_FIXTURES / version / scenario / "etc" / "containerd", tree)
    for relative, text in (extra or {}).items():
        (tree / relative).parent.mkdir(parents=True, exist_ok=True)
        (tree / relative).write_text(text)
    return tree


def verdict_of(facts, classes=None):
    return judge(facts, classes or CLASSES, node_name="node-under-test", node_labels=GPU_LABELS)


def only(verdict, code):
    found = [finding for finding in verdict["findings"] if finding["code"] == code]
    assert len(found) == 1, f"expected one {code}, got {[finding['code'] for finding in verdict['findings']]}"
    return found[0]


def codes(verdict):
    return {finding["code"] for finding in verdict["findings"]}


def line_of(path, text):
    return next(number for number, line in enumerate(path.read_text().splitlines(), start=1) if text in line)


# ------------------------------------------------------------------------------------------- 1.x rows


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


def test_relative_import_glob_is_version_gated(tmp_path, monkeypatch):
    monkeypatch.chdir("/")
    config = write_tree(tmp_path, {"config.toml": V2_ROOT_RUNC.format(imports='"conf.d/*.toml"'),
                                   "conf.d/99-nvidia.toml": V2_FULL_DROPIN})
    facts = gathered_facts(config)
    # The same evidence read as another release: fixed in 1.6.29 / 1.7.16 (PRs #9835, #9834).
    for version, fires in (("1.6.28", True), ("1.6.29", False), ("1.7.15", True), ("1.7.16", False), ("2.0.0", False)):
        facts["containerd_version"] = version
        assert ("RELATIVE_IMPORT_GLOB" in codes(verdict_of(facts))) is fires, version


def test_files_a_relative_glob_never_loaded_explain_nothing_else(tmp_path, monkeypatch):
    # gpu-node-04's partial drop-in behind a relative glob: 1.6.20 never loads it, so it replaced nothing.
    monkeypatch.chdir("/")
    dropin = (REPO_ROOT / "inventory/demo/nodes/gpu-node-04/etc/containerd/conf.d/99-nvidia.toml").read_text()
    config = write_tree(tmp_path, {"config.toml": V2_ROOT_RUNC.format(imports='"conf.d/*.toml"'), "conf.d/99-nvidia.toml": dropin})
    facts = gathered_facts(config)
    assert codes(verdict_of(facts)) == {"RELATIVE_IMPORT_GLOB"}
    facts["containerd_version"] = "1.6.29"  # the same files read by a release that loads the drop-in
    assert "CRI_TABLE_REPLACED" in codes(verdict_of(facts))


V3_ROOT = (REPO_ROOT / "inventory/demo/nodes/gpu-node-05/etc/containerd/config.toml").read_text()


def test_v3_config_on_1x(tmp_path):
    config = write_tree(tmp_path, {"config.toml": V3_ROOT})
    verdict = verdict_of(gathered_facts(config))
    assert verdict["missing_handlers"] == ["nvidia", "nvidia-cdi"]
    finding = only(verdict, "V3_CONFIG_ON_1X")
    assert finding["evidence"]["outcome"] == "ignored" and finding["evidence"]["line"] == 1
    assert finding["handlers"] == ["nvidia", "nvidia-cdi"]


@pytest.mark.parametrize("version, outcome", [("1.6.31", "ignored"), ("1.6.32", "refused"), ("1.7.16", "ignored"), ("1.7.17", "refused")])
def test_v3_config_on_1x_gates(tmp_path, version, outcome):
    facts = gathered_facts(write_tree(tmp_path, {"config.toml": V3_ROOT}))
    facts["containerd_version"] = version  # the same files read as that release
    assert only(verdict_of(facts), "V3_CONFIG_ON_1X")["evidence"]["outcome"] == outcome


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


def test_runtime_type_missing(tmp_path):
    config = write_tree(tmp_path, {"config.toml": V2_FULL_DROPIN.replace('  runtime_type = "io.containerd.runc.v2"\n  [plugins', '  [plugins', 1)})
    verdict = verdict_of(gathered_facts(config))
    finding = only(verdict, "RUNTIME_TYPE_MISSING")
    assert finding["handlers"] == ["nvidia"] and finding["evidence"]["runtime"] == "nvidia"
    assert finding["evidence"]["line"] == line_of(config, "runtimes.nvidia]")


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


def test_unknown_option_key(tmp_path):
    config = write_tree(tmp_path, {"config.toml": V2_FULL_DROPIN.replace('BinaryName = "/usr/sbin/runc"', 'binary_name = "/usr/sbin/runc"', 1)})
    verdict = verdict_of(gathered_facts(config))
    assert verdict["verdict"] == OK  # loaded, and silently runs plain runc
    finding = only(verdict, "UNKNOWN_OPTION_KEY")
    assert finding["evidence"]["option"] == "binary_name" and finding["evidence"]["runtime"] == "nvidia"
    assert (finding["evidence"]["file"], finding["evidence"]["line"]) == (str(config), line_of(config, "binary_name"))


def test_cdi_spec_missing(tmp_path):
    (tmp_path / "cdi").mkdir()
    config = write_tree(tmp_path, {"config.toml": V2_FULL_DROPIN})
    cdi_dirs = [str(tmp_path / "cdi"), str(tmp_path / "run-cdi")]
    verdict = verdict_of(gathered_facts(config, cdi_spec_dirs=cdi_dirs))
    finding = only(verdict, "CDI_SPEC_MISSING")
    assert finding["handlers"] == ["nvidia-cdi"] and finding["evidence"]["cdi_dirs"] == cdi_dirs
    (tmp_path / "cdi/nvidia.yaml").write_text("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: []\n")
    assert "CDI_SPEC_MISSING" not in codes(verdict_of(gathered_facts(config, cdi_spec_dirs=cdi_dirs)))


def test_legacy_plugin_key_in_an_unversioned_1x_config(tmp_path):
    # No `version`: containerd 1.6.20 reads plugins.cri only, and the real dump shows just the built-in runc.
    config = write_tree(tmp_path, {"config.toml": V2_FULL_DROPIN.replace("version = 2\n", "")})
    verdict = verdict_of(gathered_facts(config))
    assert verdict["missing_handlers"] == ["nvidia", "nvidia-cdi"]
    finding = only(verdict, "LEGACY_PLUGIN_KEY")
    assert finding["handlers"] == ["nvidia", "nvidia-cdi"] and "config_version" not in finding["evidence"]
    assert finding["evidence"]["line"] == line_of(config, "runtimes.runc]")


# ------------------------------------------------------------------------------------------- 2.x rows

S1_DROPIN = (SHARED_FIXTURES / "2.2.0/S1/etc/containerd/conf.d/99-nvidia.toml").read_text()


def test_confd_not_imported(tmp_path):
    # 2.2.0/S6: one root file without imports. A conf.d drop-in is not loaded — and the real dump still
    # lists the built-in pattern, so the dump's imports prove nothing.
    dump = SHARED_FIXTURES / "2.2.0/S6/config-dump.toml"
    assert "imports = ['/etc/containerd/conf.d/*.toml']" in dump.read_text()
    tree = fixture_tree(tmp_path, "2.2.0", "S6", {"conf.d/99-nvidia.toml": S1_DROPIN})
    verdict = verdict_of(facts_at_etc(tree, dump, "2.2.0"))
    assert verdict["missing_handlers"] == ["nvidia-cdi"]
    finding = only(verdict, "CONFD_NOT_IMPORTED")
    assert finding["evidence"]["file"] == "/etc/containerd/conf.d/99-nvidia.toml"
    assert finding["evidence"]["root"] == "/etc/containerd/config.toml" and finding["handlers"] == ["nvidia-cdi"]
    assert "DROPIN_NOT_IMPORTED" not in codes(verdict)
    # containerd 2.0/2.1 never had the default pattern: the same tree is a plain unimported drop-in.
    assert "CONFD_NOT_IMPORTED" not in codes(verdict_of(facts_at_etc(tree, SHARED_FIXTURES / "2.0.6/S6/config-dump.toml", "2.0.6")))


LEGACY_TABLE = """
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia-cdi]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia-cdi.options]
    BinaryName = "/usr/bin/nvidia-container-runtime.cdi"
"""


@pytest.mark.parametrize("version", ["2.0.6", "2.2.0"])
def test_legacy_plugin_key(tmp_path, version):
    # S6 (version = 3) plus nvidia-cdi under the old grpc key: ignored with a journal warning, so the
    # loaded runtimes are S6's real dump (runc, nvidia).
    tree = fixture_tree(tmp_path, version, "S6")
    (tree / "config.toml").write_text((tree / "config.toml").read_text() + LEGACY_TABLE)
    verdict = verdict_of(facts_at_etc(tree, SHARED_FIXTURES / version / "S6/config-dump.toml", version))
    assert verdict["missing_handlers"] == ["nvidia-cdi"]
    finding = only(verdict, "LEGACY_PLUGIN_KEY")
    assert finding["evidence"]["runtimes"] == ["nvidia-cdi"] and finding["evidence"]["config_version"] == 3
    assert finding["evidence"]["line"] == line_of(tree / "config.toml", 'grpc.v1.cri".containerd.runtimes.nvidia-cdi]')
    assert verdict["missing_explained"] == {"nvidia-cdi": ["LEGACY_PLUGIN_KEY"]}


def test_legacy_plugin_key_on_2_3_only_for_version_4(tmp_path):
    # 2.3 migrates every file below version 4 on its own (PR #12608): a version = 3 file is fine there.
    tree = fixture_tree(tmp_path, "2.3.4", "S6")
    (tree / "config.toml").write_text((tree / "config.toml").read_text() + LEGACY_TABLE)
    facts = facts_at_etc(tree, SHARED_FIXTURES / "2.3.4/S6/config-dump.toml", "2.3.4")
    assert "LEGACY_PLUGIN_KEY" not in codes(verdict_of(facts))
    v4_tree = fixture_tree(tmp_path / "v4", "2.3.4", "S1v4")
    dropin = v4_tree / "conf.d/99-nvidia.toml"
    dropin.write_text(dropin.read_text() + LEGACY_TABLE.replace("nvidia-cdi", "nvidia-legacy"))
    facts = facts_at_etc(v4_tree, SHARED_FIXTURES / "2.3.4/S1v4/config-dump.toml", "2.3.4")
    assert only(verdict_of(facts), "LEGACY_PLUGIN_KEY")["evidence"]["runtimes"] == ["nvidia-legacy"]


def test_mixed_config_versions(tmp_path):
    # Root version 2 (S3full's) + version 3 drop-in (S1's) on 2.2.0: merged version 3, no CRI migration,
    # the root's runc settings are ignored; the loaded runtimes are those of 2.2.0/S1's real dump.
    tree = fixture_tree(tmp_path, "2.2.0", "S3full", {"conf.d/99-nvidia.toml": S1_DROPIN})
    verdict = verdict_of(facts_at_etc(tree, SHARED_FIXTURES / "2.2.0/S1/config-dump.toml", "2.2.0"))
    assert verdict["verdict"] == OK
    finding = only(verdict, "MIXED_CONFIG_VERSIONS")
    assert finding["severity"] == "warning"
    assert (finding["evidence"]["root_version"], finding["evidence"]["config_version"]) == (2, 3)
    assert finding["evidence"]["lost_runtimes"] == ["runc"]


def test_mixed_config_versions_refused_on_2_3(tmp_path):
    # 2.3.0–2.3.4 refuse a drop-in newer than the root (PR #12891): judged from S1's dump file.
    tree = fixture_tree(tmp_path, "2.3.4", "S1", {"conf.d/99-nvidia.toml": (SHARED_FIXTURES / "2.3.4/S1v4/etc/containerd/conf.d/99-nvidia.toml").read_text()})
    finding = only(verdict_of(facts_at_etc(tree, SHARED_FIXTURES / "2.3.4/S1/config-dump.toml", "2.3.4")), "MIXED_CONFIG_VERSIONS")
    assert finding["severity"] == "error" and "refuses to start" in finding["message"]


def test_default_runtime_not_runc(tmp_path):
    tree = fixture_tree(tmp_path, "2.2.0", "S5")
    verdict = verdict_of(facts_at_etc(tree, SHARED_FIXTURES / "2.2.0/S5/config-dump.toml", "2.2.0"))
    assert verdict["verdict"] == OK
    finding = only(verdict, "DEFAULT_RUNTIME_NOT_RUNC")
    assert {key: finding["evidence"][key] for key in ("DEFAULT_RUNTIME", "AFFECTED", "NEEDS_RUNTIMECLASS", "BLAST_RADIUS")} == {
        "DEFAULT_RUNTIME": "nvidia", "AFFECTED": "all", "NEEDS_RUNTIMECLASS": "no", "BLAST_RADIUS": "node"}
    assert (finding["evidence"]["file"], finding["evidence"]["line"]) == ("/etc/containerd/conf.d/50-default.toml", 4)


def crictl_evidence(path):
    """The node's raw evidence for a `crictl info` that printed ``path`` (real captures, crictl 1.36)."""
    return {"source": "crictl", "socket": "/run/containerd/containerd.sock", "command": ["crictl", "info"],
            "rc": 0, "stdout": path.read_text(), "stderr": "", "error": None}


@pytest.mark.parametrize("version, scenario, tree_in", [("2.2.0", "S1", "etc-after-edit"), ("1.7.34", "S3full", "etc-after-edit")])
def test_pending_restart(tmp_path, version, scenario, tree_in):
    # nvidia-cdi deleted from the drop-in without a restart: the dump lacks it, the daemon still serves it.
    running = SHARED_FIXTURES / version / scenario / "running-daemon"
    facts = facts_at_etc(running / tree_in, running / "config-dump-after-edit-no-restart.toml", version)
    from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._daemon_view import daemon_view

    facts["daemon"] = daemon_view(crictl_evidence(running / "crictl-info-after-edit-no-restart.json"))
    # Dump and crictl info were captured together on one node: stand-ins for running containerd there. A dump read
    # from a file is never judged by a daemon's view (it may be another node's capture), so say where these came from.
    # The binaries were stat'ed here, not on the capture node (which had them): leave them unknown.
    facts["source"], facts["binaries"] = "command", None
    verdict = verdict_of(facts)
    assert verdict["loaded_source"] == "daemon" and verdict["daemon_runtimes"] == ["nvidia", "nvidia-cdi", "runc"]
    assert verdict["verdict"] == OK
    finding = only(verdict, "PENDING_RESTART")
    assert finding["evidence"]["only_in_daemon"] == ["nvidia-cdi"] and finding["evidence"]["dump_runtimes"] == ["nvidia", "runc"]
    # Seen the other way (the daemon lost what the files now define), the handler is missing: an error.
    facts["daemon"]["runtimes"] = ["runc"]
    verdict = verdict_of(facts)
    assert verdict["missing_handlers"] == ["nvidia", "nvidia-cdi"]
    assert only(verdict, "PENDING_RESTART")["severity"] == "error"
    assert verdict["missing_explained"]["nvidia"] == ["PENDING_RESTART"]


def test_rows_are_silent_without_evidence():
    # Older facts (no config_files, import_globs, binaries, cdi_dirs, daemon): only dump-based rules can fire.
    dump = (REPO_ROOT / "inventory/demo/nodes/gpu-node-02/config-dump.toml").read_text()
    from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._containerd_config import facts_from_dump

    verdict = verdict_of(facts_from_dump(dump, source="file", source_name="dump", containerd_version="1.6.20"))
    assert verdict["verdict"] == MISSING and verdict["findings"] == []
    # Without the files, "not configured anywhere" cannot be claimed: the handlers stay unexplained.
    assert verdict["missing_explained"] == {"nvidia": [], "nvidia-cdi": []}
