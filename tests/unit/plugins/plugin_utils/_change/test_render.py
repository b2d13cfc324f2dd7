"""The role's pure core: plan (preflight, rendering, imports) and the judgement of a candidate's dump.

Rendered files are parsed with ``tomllib``; for 2.x the rendered drop-in is also written into a scenario tree of
tests/fixtures/containerd (whose own drop-in it must equal after parsing) and the real 2.2/2.3/2.4 binary dumps that
tree at test time (support.containerd_trees): that dump is judged as the candidate's. What a real binary proves is
named in each test; containerd 1.6 is proven live in tests/integration/role/.
"""
import subprocess
import tomllib
from pathlib import Path

import pytest
from support.containerd_trees import copy_tree, dump_node, dump_text, release_named, scenario_etc
from support.tools import require_command

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import facts_from_dump
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.render import config_target, make_plan, restore_plan
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.candidate import PLACEHOLDER
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.loaded_config import LoadedConfig
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.proof import (
    candidate_tree,
    judge_candidate,
)
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.toml_write import (
    TomlWriteError,
    add_import,
    dumps,
    set_imports,
)

NVIDIA = {"name": "nvidia", "binary_name": "/usr/bin/nvidia-container-runtime"}
NVIDIA_CDI = {"name": "nvidia-cdi", "binary_name": "/usr/bin/nvidia-container-runtime.cdi"}
ROOT_V2 = """# node root, hand-written
version = 2
imports = ["/etc/containerd/conf.d/*.conf"]  # vendor files
oom_score = -999
unknown_future_key = "kept"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.8"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = true
"""


def plan_for(root_text, version="1.6.20", runtimes=(NVIDIA,), **kwargs):
    arguments = dict(
        root_path="/etc/containerd/config.toml", root_text=root_text, containerd_version=version,
        runtimes=list(runtimes), dropin_dir="/etc/containerd/conf.d", dropin_name="99-gpufleet.toml",
        current_default_runtime="runc",
    )
    arguments.update(kwargs)
    return make_plan(**arguments)


def files_of(plan):
    return {item["path"]: item["content"] for item in plan["files"]}


@pytest.mark.parametrize(("version", "expected"), [
    ("1.6.20", (2, "io.containerd.grpc.v1.cri")), ("1.7.34", (2, "io.containerd.grpc.v1.cri")),
    ("2.0.6", (3, "io.containerd.cri.v1.runtime")), ("2.2.0", (3, "io.containerd.cri.v1.runtime")),
    ("2.3.4", (4, "io.containerd.cri.v1.runtime")), ("2.4.0", (4, "io.containerd.cri.v1.runtime")),
])
def test_config_version_and_plugin_key_follow_the_binary(version, expected):
    assert config_target(version) == expected


def test_add_import_keeps_comments_unknown_keys_and_every_existing_import():
    edited = add_import(ROOT_V2, "/etc/containerd/conf.d/*.toml")
    assert "# node root, hand-written" in edited and "# vendor files" in edited
    document = tomllib.loads(edited)
    assert document["imports"] == ["/etc/containerd/conf.d/*.conf", "/etc/containerd/conf.d/*.toml"]
    original = tomllib.loads(ROOT_V2)
    assert {k: v for k, v in document.items() if k != "imports"} == {k: v for k, v in original.items() if k != "imports"}
    # Exactly one line differs.
    assert [a for a, b in zip(ROOT_V2.splitlines(), edited.splitlines(), strict=True) if a != b] == [
        'imports = ["/etc/containerd/conf.d/*.conf"]  # vendor files']


def test_add_import_creates_the_array_before_the_first_table():
    edited = add_import('version = 2\n\n[plugins."x"]\n  a = 1\n', "/c/*.toml")
    assert edited == 'version = 2\nimports = ["/c/*.toml"]\n\n[plugins."x"]\n  a = 1\n'


def test_add_import_refuses_what_it_cannot_place_safely():
    # The array's last line ends in a comment: appending after it would comment the new entry out.
    with pytest.raises(TomlWriteError):
        add_import('imports = [\n  "/a/*.toml" # vendor\n]\n', "/b/*.toml")


def test_set_imports_changes_only_the_imports():
    edited = set_imports(ROOT_V2, ["/tmp/x/*.toml"])
    assert tomllib.loads(edited)["imports"] == ["/tmp/x/*.toml"]
    assert tomllib.loads(edited)["unknown_future_key"] == "kept"


def test_writer_round_trips_through_tomllib():
    document = {"version": 2, "a": {"b c": {"d": [1, 2], "e": 'q"uote\n', "f": [{"x": 1}], "g": 1.5, "h": False}}}
    assert tomllib.loads(dumps(document)) == document
    assert dumps(document) == dumps(document)


@pytest.mark.parametrize("name", ["NVIDIA", "nvidia_gpu", "-nvidia", "nvidia-", "a" * 64, "nvidia.cdi", ""])
def test_runtime_names_must_be_dns_labels(name):
    plan = plan_for(ROOT_V2, runtimes=[{"name": name}])
    assert any("is not a DNS-1123 label" in error for error in plan["errors"])
    assert plan["files"] == []


def test_v1_containerd_carries_the_whole_cri_table_with_runc_options_and_adds_an_absolute_import():
    plan = plan_for(ROOT_V2, runtimes=[NVIDIA, NVIDIA_CDI])
    assert plan["errors"] == []
    files = files_of(plan)
    dropin = tomllib.loads(files["/etc/containerd/conf.d/99-gpufleet.toml"])
    cri = dropin["plugins"]["io.containerd.grpc.v1.cri"]
    assert dropin["version"] == 2
    assert cri["sandbox_image"] == "registry.k8s.io/pause:3.8"
    assert cri["containerd"]["runtimes"]["runc"]["options"] == {"SystemdCgroup": True}
    assert cri["containerd"]["runtimes"]["nvidia"] == {
        "runtime_type": "io.containerd.runc.v2", "options": {"BinaryName": "/usr/bin/nvidia-container-runtime"}}
    assert plan["imports_added"] == ["/etc/containerd/conf.d/*.toml"]
    assert tomllib.loads(files["/etc/containerd/config.toml"])["imports"][0] == "/etc/containerd/conf.d/*.conf"
    assert list(files) == ["/etc/containerd/conf.d/99-gpufleet.toml", "/etc/containerd/config.toml"]


def test_v1_root_without_runtimes_gets_runc_written_out():
    # go-toml v1 makes a fresh map for any `runtimes` table: the built-in runc would vanish (reference §2).
    plan = plan_for("version = 2\n")
    dropin = tomllib.loads(files_of(plan)["/etc/containerd/conf.d/99-gpufleet.toml"])
    assert dropin["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]["runc"] == {
        "runtime_type": "io.containerd.runc.v2"}


def test_v1_a_cri_file_loaded_after_the_dropin_is_refused():
    later = 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n  runtime_type = "x"\n'
    root = 'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n'
    plan = plan_for(root, glob_matches={"/etc/containerd/conf.d/*.toml": ["/etc/containerd/conf.d/zz-vendor.toml"]},
                    imported_texts={"/etc/containerd/conf.d/zz-vendor.toml": later})
    assert plan["files"] == []
    assert "zz-vendor.toml is loaded after the drop-in" in plan["errors"][0]


def test_plan_is_deterministic_and_idempotent_once_applied():
    first = plan_for(ROOT_V2, runtimes=[NVIDIA, NVIDIA_CDI])
    again = plan_for(ROOT_V2, runtimes=[NVIDIA, NVIDIA_CDI])
    assert first["files"] == again["files"]
    files = files_of(first)
    dropin_path = "/etc/containerd/conf.d/99-gpufleet.toml"
    applied = plan_for(files["/etc/containerd/config.toml"], runtimes=[NVIDIA, NVIDIA_CDI],
                       glob_matches={"/etc/containerd/conf.d/*.toml": [dropin_path]},
                       imported_texts={dropin_path: files[dropin_path]})
    assert files_of(applied) == {dropin_path: files[dropin_path]}


@pytest.mark.parametrize(("root", "version", "needle"), [
    (None, "1.6.20", "does not exist and option manage_root_config is false"),
    ("version = 3\n", "1.6.20", "has version = 3, above the 2 that containerd 1.6.20 reads"),
    ("version = 4\n", "2.2.0", "has version = 4, above the 3"),
    ("imports = []\n", "1.6.20", "is version 1 (no version key)"),
    ("version = 2\n[plugins\n", "1.6.20", "is not valid TOML"),
])
def test_preflight_refusals_name_the_file_and_the_problem(root, version, needle):
    plan = plan_for(root, version=version)
    assert plan["files"] == []
    assert needle in "\n".join(plan["errors"])


def test_an_import_pattern_that_misses_the_dropin_is_refused():
    plan = plan_for(ROOT_V2, import_pattern="/etc/containerd/other.d/*.toml")
    assert plan["files"] == []
    assert "does not match the drop-in '/etc/containerd/conf.d/99-gpufleet.toml'" in plan["errors"][0]


def test_relative_paths_are_refused():
    plan = plan_for(ROOT_V2, dropin_dir="conf.d")
    assert "is relative" in plan["errors"][0]


def test_default_runtime_guard_prints_the_blast_radius():
    plan = plan_for(ROOT_V2, default_runtime="nvidia")
    assert plan["files"] == []
    assert plan["guard_lines"] == ["DEFAULT_RUNTIME=nvidia", "AFFECTED=all", "NEEDS_RUNTIMECLASS=no", "BLAST_RADIUS=node"]
    allowed = plan_for(ROOT_V2, default_runtime="nvidia", allow_default_change=True)
    dropin = tomllib.loads(files_of(allowed)["/etc/containerd/conf.d/99-gpufleet.toml"])
    assert dropin["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["default_runtime_name"] == "nvidia"
    # Same default as today: no guard.
    assert plan_for(ROOT_V2, default_runtime="runc")["errors"] == []


def test_managed_root_is_rendered_for_the_binary():
    plan = plan_for("version = 3\n", manage_root_config=True, root_settings={"root": "/var/lib/containerd"})
    root = tomllib.loads(files_of(plan)["/etc/containerd/config.toml"])
    assert root == {"version": 2, "root": "/var/lib/containerd", "imports": ["/etc/containerd/conf.d/*.toml"]}


@pytest.mark.parametrize(("version", "config_version"), [("2.2.0", 3), ("2.3.4", 4)])
def test_v2_dropin_takes_the_root_files_version_and_the_runtime_plugin_key(version, config_version):
    root = f'version = {config_version}\nimports = ["/etc/containerd/conf.d/*.toml"]\n'
    plan = plan_for(root, version=version, runtimes=[NVIDIA], default_runtime="nvidia", allow_default_change=True)
    files = files_of(plan)
    assert list(files) == ["/etc/containerd/conf.d/99-gpufleet.toml"]  # the root already imports it
    dropin = tomllib.loads(files["/etc/containerd/conf.d/99-gpufleet.toml"])
    assert dropin == {"version": config_version, "plugins": {"io.containerd.cri.v1.runtime": {"containerd": {
        "default_runtime_name": "nvidia",
        "runtimes": {"nvidia": {"runtime_type": "io.containerd.runc.v2",
                                "options": {"BinaryName": "/usr/bin/nvidia-container-runtime"}}}}}}}


def test_v2_binary_with_a_version_2_root_writes_a_version_2_dropin():
    # Root v2 + drop-in v3 would make the merged version 3 and drop the root's CRI settings (§3).
    plan = plan_for('version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n', version="2.2.0")
    dropin = tomllib.loads(files_of(plan)["/etc/containerd/conf.d/99-gpufleet.toml"])
    assert dropin["version"] == 2 and list(dropin["plugins"]) == ["io.containerd.grpc.v1.cri"]


@pytest.mark.parametrize(("release_name", "scenario"), [("2.2", "S1"), ("2.3", "S1"), ("2.3", "S1v4"), ("2.4", "S1v4")])
@pytest.mark.components
def test_v2_rendering_matches_a_real_fixture_tree_whose_real_dump_passes_the_judgement(release_name, scenario, tmp_path):
    """Proven by a real binary: the drop-in rendered here, written into the scenario tree in place of its own (equal
    after parsing), is dumped by that containerd release, and the dump passes the judgement. Not proven: the daemon."""
    release = release_named(release_name)
    etc = scenario_etc(scenario)
    root_text = (etc / "config.toml").read_text()
    fixture_dropin = etc / "conf.d" / "99-nvidia.toml"
    plan = plan_for(root_text, version=release.version, runtimes=[NVIDIA, NVIDIA_CDI], dropin_name="99-nvidia.toml",
                    glob_matches={"/etc/containerd/conf.d/*.toml": ["/etc/containerd/conf.d/99-nvidia.toml"]},
                    imported_texts={"/etc/containerd/conf.d/99-nvidia.toml": fixture_dropin.read_text()})
    assert plan["errors"] == []
    files = files_of(plan)
    assert list(files) == ["/etc/containerd/conf.d/99-nvidia.toml"]
    assert tomllib.loads(files["/etc/containerd/conf.d/99-nvidia.toml"]) == tomllib.loads(fixture_dropin.read_text())
    node = copy_tree(scenario, tmp_path / "node", {"conf.d/99-nvidia.toml": files["/etc/containerd/conf.d/99-nvidia.toml"]})
    dump = dump_node(release, node)
    assert dump.returncode == 0, dump.stderr
    errors, facts = judge_candidate(plan, LoadedConfig(dump.text, f"containerd {release} dump"))
    assert errors == []
    assert {"runc", "nvidia", "nvidia-cdi"} <= set(facts["runtimes"])
    assert facts["runtimes"]["nvidia-cdi"]["binary_name"] == "/usr/bin/nvidia-container-runtime.cdi"


@pytest.mark.components
def test_judgement_fails_a_dump_that_lost_a_requested_runtime_or_an_existing_one(tmp_path):
    dump = dump_text("S6-v2", "1.7", tmp_path)  # the real 1.7 dump of S6-v2: runc + nvidia, no nvidia-cdi
    current = facts_from_dump(dump, source="file", source_name="fixture")
    plan = plan_for(ROOT_V2, runtimes=[NVIDIA_CDI])
    errors, _facts = judge_candidate(plan, LoadedConfig(dump, "fixture"), current_facts=current)
    assert errors == ["MISSING=nvidia-cdi: the candidate configuration does not load runtime 'nvidia-cdi'"]
    richer = dict(current, runtimes=dict(current["runtimes"], kata={"options": {}, "runtime_type": "x", "binary_name": None}))
    errors, _facts = judge_candidate(plan_for(ROOT_V2, runtimes=[NVIDIA]), LoadedConfig(dump, "fixture"), current_facts=richer)
    assert "runtime 'kata' is served today and would not be after the change" in errors


def test_candidate_tree_mirrors_the_config_dir_and_rewrites_imports_into_it():
    plan = plan_for(ROOT_V2, glob_matches={"/etc/containerd/conf.d/*.conf": ["/etc/containerd/conf.d/a.conf"]})
    tree = candidate_tree(plan, root_path="/etc/containerd/config.toml", root_text=ROOT_V2,
                          dropin_dir="/etc/containerd/conf.d", existing_paths={"/etc/containerd/conf.d/a.conf"})
    root = tomllib.loads(tree["files"][PLACEHOLDER + "/etc/containerd/config.toml"])
    assert root["imports"] == [PLACEHOLDER + "/etc/containerd/conf.d/*.conf", PLACEHOLDER + "/etc/containerd/conf.d/*.toml"]
    assert tree["copy_files"] == {PLACEHOLDER + "/etc/containerd/conf.d/a.conf": "/etc/containerd/conf.d/a.conf"}
    assert tree["dropin_paths"] == [PLACEHOLDER + "/etc/containerd/conf.d/99-gpufleet.toml"]
    assert Path(tree["config_path"]).name == "config.toml"


def test_a_null_option_is_one_clear_error_naming_the_runtime_and_the_option():
    # YAML `SystemdCgroup:` left empty is null, which no TOML file can hold.
    plan = plan_for(ROOT_V2, runtimes=[{"name": "nvidia", "options": {"SystemdCgroup": None}}])
    assert plan["files"] == []
    assert plan["errors"] == ["option runtimes: runtime 'nvidia' option 'SystemdCgroup' is null (empty in "
                              "YAML), which a TOML file cannot hold; give it a value or remove it"]


@pytest.mark.components
def test_a_default_set_through_root_settings_is_caught_in_the_candidates_real_dump(tmp_path):
    """Real containerd 1.6 dumps the rendered drop-in (a whole version 2 config on 1.x): its loaded default is
    root_settings' nvidia, which the default_runtime input never named, so the guard must fire from the dump."""
    containerd = require_command("containerd", "containerd")
    settings = {"plugins": {"io.containerd.grpc.v1.cri": {"containerd": {
        "default_runtime_name": "nvidia", "runtimes": {"runc": {"runtime_type": "io.containerd.runc.v2"}}}}}}
    for allow in (False, True):
        plan = plan_for("version = 2\n", manage_root_config=True, root_settings=settings, allow_default_change=allow)
        assert plan["errors"] == [] and plan["guard_lines"] == []  # the inputs alone do not show the change
        dropin = tmp_path / "dropin.toml"
        dropin.write_text(files_of(plan)["/etc/containerd/conf.d/99-gpufleet.toml"])
        dumped = subprocess.run([containerd, "--config", str(dropin), "config", "dump"], capture_output=True, text=True,
                                check=True, cwd="/", timeout=60)
        errors, facts = judge_candidate(plan, LoadedConfig(dumped.stdout, "dump"))
        assert facts["default_runtime_name"] == "nvidia"
        if allow:
            assert errors == []
        else:
            assert errors == ["changing default_runtime_name from 'runc' to 'nvidia' sends every pod on the node that names "
                              "no RuntimeClass through it; set option allow_default_change: true to do so"]
            assert plan["guard_lines"] == ["DEFAULT_RUNTIME=nvidia", "AFFECTED=all", "NEEDS_RUNTIMECLASS=no",
                                           "BLAST_RADIUS=node"]


def test_restore_plan_restores_backups_deletes_created_files_and_says_why_writing_failed():
    written = {"results": [
        {"item": {"path": "/etc/containerd/conf.d/99-gpufleet.toml"}, "changed": True},  # created
        {"item": {"path": "/etc/containerd/config.toml"}, "changed": True, "backup_file": "/etc/containerd/config.toml.1.bak"},
        {"item": {"path": "/etc/containerd/conf.d/10-same.toml"}, "changed": False},  # untouched
        {"item": {"path": "/etc/containerd/conf.d/20-broken.toml"}, "changed": False, "failed": True, "msg": "Read-only file system"},
    ]}
    plan = restore_plan(written, written)
    assert plan["restore"] == [
        {"path": "/etc/containerd/conf.d/99-gpufleet.toml", "backup": None, "delete": True},
        {"path": "/etc/containerd/config.toml", "backup": "/etc/containerd/config.toml.1.bak", "delete": False},
    ]
    assert plan["failure_msg"] == ("containerd_runtimes: writing the proven files failed, every file written was restored: "
                                   "Read-only file system")
    # A single task failed (the drop-in directory), nothing was registered yet; no failure given: no message.
    assert restore_plan({}, {"failed": True, "msg": "Permission denied"}) == {
        "restore": [], "failure_msg": "containerd_runtimes: writing the proven files failed, every file written was restored: "
                                      "Permission denied"}
    assert restore_plan(written)["failure_msg"] is None


@pytest.mark.parametrize("key", ["SystemdCgroup\n", "runc\n\n", "a\nb"])
def test_a_key_with_a_newline_is_written_quoted_and_reads_back(key):
    """``$`` matches before a trailing newline: a key checked with it was written bare, and the file broke."""
    from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.toml_write import dumps

    document = {"plugins": {"x": {key: True}}}
    assert tomllib.loads(dumps(document)) == document


def test_v1_a_registry_only_dropin_shadowing_the_root_keeps_the_builtin_runc_that_is_loaded():
    """Issue 23 item 5: 1.x loads the later file's CRI table whole, so runc is the built-in one; the plan writes that,
    not the shadowed root's SystemdCgroup (tests/integration/role/test_role_containerd_16.py proves it on 1.6.20)."""
    root = ('version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
            '  runtime_type = "io.containerd.runc.v2"\n  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n'
            '    SystemdCgroup = true\n')
    registry = 'version = 2\n[plugins."io.containerd.grpc.v1.cri".registry.mirrors."docker.io"]\n  endpoint = ["https://m"]\n'
    plan = plan_for(root, glob_matches={"/etc/containerd/conf.d/*.toml": ["/etc/containerd/conf.d/10-registry.toml"]},
                    imported_texts={"/etc/containerd/conf.d/10-registry.toml": registry})
    assert plan["errors"] == []
    cri = tomllib.loads(files_of(plan)["/etc/containerd/conf.d/99-gpufleet.toml"])["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["containerd"]["runtimes"]["runc"] == {"runtime_type": "io.containerd.runc.v2"}
    assert cri["registry"]["mirrors"]["docker.io"]["endpoint"] == ["https://m"]
