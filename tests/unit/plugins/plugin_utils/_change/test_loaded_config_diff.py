"""The whole-config comparison behind the role's proof (_loaded_config_diff), on dumps the real binaries print.

Each pair of trees is dumped by the real containerd 1.6.20 (and 2.2.9) at test time: the "before" tree is a node, the
"after" tree the same node with a change; the comparison must list exactly the keys the change lost or altered.
"""
from pathlib import Path

import pytest
from support.containerd_trees import dump_node, release_named

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.loaded_config import LoadedConfig
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.loaded_config_diff import (
    differences,
    named_by_plan,
    summary_and_defaults,
)

CRI_V2 = 'plugins."io.containerd.grpc.v1.cri"'


def nothing_named(_path):
    return False


def dump_of(tmp_path: Path, name: str, release: str, files: dict) -> LoadedConfig:
    etc = tmp_path / name / "node" / "etc" / "containerd"
    etc.mkdir(parents=True)
    for relative, text in files.items():
        (etc / relative).parent.mkdir(parents=True, exist_ok=True)
        (etc / relative).write_text(text, encoding="utf-8")
    dump = dump_node(release_named(release), etc.parents[1])
    assert dump.returncode == 0, dump.stderr[-600:]
    return LoadedConfig(dump.text, f"the {name} dump")


@pytest.mark.components
def test_identical_trees_differ_in_nothing(tmp_path):
    root = {"config.toml": "version = 2\noom_score = -999\n"}
    text = dump_of(tmp_path, "a", "1.6", root)
    assert differences(text, dump_of(tmp_path, "b", "1.6", root), named=nothing_named) == []


@pytest.mark.components
def test_every_lost_setting_is_listed_with_its_old_and_new_value(tmp_path):
    before = dump_of(tmp_path, "before", "1.6", {"config.toml": (
        'version = 2\noom_score = -999\n[debug]\n  level = "debug"\n[metrics]\n  address = "127.0.0.1:1338"\n'
        f'[grpc]\n  max_recv_message_size = 1000\n[{CRI_V2}.containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
        f'[{CRI_V2}.containerd.runtimes.runc.options]\n  SystemdCgroup = true\n')})
    after = dump_of(tmp_path, "after", "1.6", {"config.toml": "version = 2\n"})
    lines = differences(before, after, named=nothing_named)
    assert "oom_score: -999 -> 0" in lines
    assert "debug.level: 'debug' -> ''" in lines
    assert "metrics.address: '127.0.0.1:1338' -> ''" in lines
    assert "grpc.max_recv_message_size: 1000 -> 16777216" in lines
    assert "plugins.io.containerd.grpc.v1.cri.containerd.runtimes.runc.options.SystemdCgroup: True -> False" in lines
    assert len(lines) == 5, lines


@pytest.mark.components
def test_a_runtime_option_at_its_zero_value_equals_its_absence(tmp_path):
    """1.6 prints the built-in runc's options in full; the same runc written in a file has only what the file says.
    The shim decodes both into the same runcoptions.Options, so they are the same setting."""
    builtin = dump_of(tmp_path, "builtin", "1.6", {"config.toml": "version = 2\n"})
    written = dump_of(tmp_path, "written", "1.6", {"config.toml": (
        f'version = 2\n[{CRI_V2}.containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n')})
    assert "BinaryName" in builtin.text and "BinaryName" not in written.text.split("runtimes.runc.options]")[-1].split("[")[0]
    assert differences(builtin, written, named=nothing_named) == []
    # A non-zero option is a setting all the same.
    systemd = dump_of(tmp_path, "systemd", "1.6", {"config.toml": (
        f'version = 2\n[{CRI_V2}.containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
        f'[{CRI_V2}.containerd.runtimes.runc.options]\n  SystemdCgroup = true\n')})
    assert differences(systemd, written, named=nothing_named) == [
        "plugins.io.containerd.grpc.v1.cri.containerd.runtimes.runc.options.SystemdCgroup: True -> (absent)"]


@pytest.mark.components
def test_credentials_are_never_repeated(tmp_path):
    registry = f'[{CRI_V2}.registry.configs."r.example".auth]\n'
    before = dump_of(tmp_path, "before", "1.6", {"config.toml": f'version = 2\n{registry}  password = "hunter2-secret"\n'})
    after = dump_of(tmp_path, "after", "1.6", {"config.toml": f'version = 2\n{registry}  password = "other-secret"\n'})
    lines = differences(before, after, named=nothing_named)
    assert lines == ['plugins.io.containerd.grpc.v1.cri.registry.configs.r.example.auth.password: <redacted> -> <redacted>']


@pytest.mark.parametrize("release, plugin", [("1.6", "io.containerd.grpc.v1.cri"), ("2.2", "io.containerd.cri.v1.runtime")])
def test_the_plan_names_its_runtimes_its_default_and_its_root_settings(release, plugin):
    plan = {"expected": {"runtimes": {"nvidia": {}}, "default_runtime": None}, "allow_default_change": False}
    named = named_by_plan(plan, [plugin], root_setting_paths=[["grpc", "address"]])
    assert named(("plugins", plugin, "containerd", "runtimes", "nvidia", "options", "BinaryName"))
    assert not named(("plugins", plugin, "containerd", "runtimes", "runc", "options", "BinaryName"))
    assert not named(("plugins", plugin, "containerd", "default_runtime_name"))
    assert named(("grpc", "address")) and not named(("grpc", "uid"))
    assert named_by_plan({**plan, "allow_default_change": True}, [plugin])(("plugins", plugin, "containerd", "default_runtime_name"))


def test_the_summary_keeps_what_differs_from_the_release_defaults_and_counts_the_rest():
    """Issue 23 item 7: a new runtime's table is printed whole by `config dump`; its keys at the release's defaults
    (empty strings, false, 0) are listed apart (-v), what the inputs set stays in the summary."""
    before = '[plugins.cri.containerd.runtimes.runc]\nruntime_type = "io.containerd.runc.v2"\n'
    after = before + ('[plugins.cri.containerd.runtimes.nvidia]\nruntime_type = "io.containerd.runc.v2"\n'
                      'cni_conf_dir = ""\nprivileged_without_host_devices = false\n'
                      '[plugins.cri.containerd.runtimes.nvidia.options]\nBinaryName = "/usr/bin/nvidia-container-runtime"\n')
    summary, defaults = summary_and_defaults(LoadedConfig(before, "before"), LoadedConfig(after, "after"))
    assert summary == ["plugins.cri.containerd.runtimes.nvidia.options.BinaryName: (absent) -> '/usr/bin/nvidia-container-runtime'",
                       "plugins.cri.containerd.runtimes.nvidia.runtime_type: (absent) -> 'io.containerd.runc.v2'"]
    assert defaults == ["plugins.cri.containerd.runtimes.nvidia.cni_conf_dir: (absent) -> ''",
                        "plugins.cri.containerd.runtimes.nvidia.privileged_without_host_devices: (absent) -> False"]
