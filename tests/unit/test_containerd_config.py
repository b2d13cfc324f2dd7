"""Dump parsing and facts, on real `containerd config dump` outputs.

containerd 1.7, 2.0, 2.2 and 2.3 dumps come from ../shared/fixtures (real binaries built from
release tags); 1.6 dumps are produced live by Debian's containerd in the tests below.
"""
import subprocess

import pytest
from support.paths import SHARED_FIXTURES
from support.tools import require_command

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._containerd_config import (
    CRI_PLUGIN_V2,
    CRI_RUNTIME_PLUGIN_V3,
    facts_from_dump,
    parse_containerd_version,
    root_config_summary,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._errors import RuntimeGateError

NVIDIA_BIN = "/usr/bin/nvidia-container-runtime"
CDI_BIN = "/usr/bin/nvidia-container-runtime.cdi"
ALL_THREE = {"runc": None, "nvidia": NVIDIA_BIN, "nvidia-cdi": CDI_BIN}
RUNC_NVIDIA = {"runc": None, "nvidia": NVIDIA_BIN}

# (version, scenario) → (dump version, plugin key, default runtime, {runtime: BinaryName}), read off the
# fixture README and the trees, not off the parser.
FIXTURE_EXPECTATIONS = {
    ("1.7.34", "S3full"): (2, CRI_PLUGIN_V2, "runc", ALL_THREE),
    ("1.7.34", "S6-v2"): (2, CRI_PLUGIN_V2, "runc", RUNC_NVIDIA),
    ("2.0.6", "S1"): (3, CRI_RUNTIME_PLUGIN_V3, "runc", ALL_THREE),
    ("2.0.6", "S3full"): (3, CRI_RUNTIME_PLUGIN_V3, "runc", ALL_THREE),
    ("2.0.6", "S5"): (3, CRI_RUNTIME_PLUGIN_V3, "nvidia", ALL_THREE),
    ("2.0.6", "S6"): (3, CRI_RUNTIME_PLUGIN_V3, "runc", RUNC_NVIDIA),
    ("2.2.0", "S1"): (3, CRI_RUNTIME_PLUGIN_V3, "runc", ALL_THREE),
    ("2.2.0", "S3full"): (3, CRI_RUNTIME_PLUGIN_V3, "runc", ALL_THREE),
    ("2.2.0", "S5"): (3, CRI_RUNTIME_PLUGIN_V3, "nvidia", ALL_THREE),
    ("2.2.0", "S6"): (3, CRI_RUNTIME_PLUGIN_V3, "runc", RUNC_NVIDIA),
    ("2.3.4", "S1"): (4, CRI_RUNTIME_PLUGIN_V3, "runc", ALL_THREE),
    ("2.3.4", "S1v4"): (4, CRI_RUNTIME_PLUGIN_V3, "runc", ALL_THREE),
    ("2.3.4", "S3full"): (4, CRI_RUNTIME_PLUGIN_V3, "runc", ALL_THREE),
    ("2.3.4", "S5"): (4, CRI_RUNTIME_PLUGIN_V3, "nvidia", ALL_THREE),
    ("2.3.4", "S6"): (4, CRI_RUNTIME_PLUGIN_V3, "runc", RUNC_NVIDIA),
}


def _fixture_dirs():
    return sorted(path.parent for path in SHARED_FIXTURES.glob("*/*/config-dump.rc"))


def test_every_fixture_is_covered():
    fixtures = {(path.parent.name, path.name) for path in _fixture_dirs()}
    assert fixtures, f"no fixtures found under {SHARED_FIXTURES}"
    failing = {fixture for fixture in fixtures if (SHARED_FIXTURES / fixture[0] / fixture[1] / "config-dump.rc").read_text().strip() != "0"}
    assert fixtures - failing == set(FIXTURE_EXPECTATIONS)


@pytest.mark.parametrize("version,scenario", sorted(FIXTURE_EXPECTATIONS))
def test_real_dump_facts(version, scenario):
    path = SHARED_FIXTURES / version / scenario / "config-dump.toml"
    facts = facts_from_dump(path.read_text(), source="file", source_name=f"dump_file '{path}'")
    dump_version, plugin_key, default_runtime, runtimes = FIXTURE_EXPECTATIONS[(version, scenario)]
    assert facts["dump_version"] == dump_version
    assert facts["cri_runtime_plugin"] == plugin_key
    assert facts["default_runtime_name"] == default_runtime
    assert {name: runtime["binary_name"] for name, runtime in facts["runtimes"].items()} == runtimes
    assert all(runtime["runtime_type"] == "io.containerd.runc.v2" for runtime in facts["runtimes"].values())
    assert facts["cri_disabled"] is False
    assert facts["ignored_runtimes"] == {}


def test_failed_dump_of_v3_tree_on_1_7_is_empty_and_refused():
    directory = SHARED_FIXTURES / "1.7.34" / "S1"
    assert (directory / "config-dump.rc").read_text().strip() == "1"
    with pytest.raises(RuntimeGateError, match="printed nothing"):
        facts_from_dump((directory / "config-dump.toml").read_text(), source="command", source_name="`containerd config dump`")


def test_runtimes_under_the_old_key_in_a_v3_dump_are_reported_not_loaded():
    dump = """
version = 3
[plugins.'io.containerd.cri.v1.runtime'.containerd]
  default_runtime_name = 'runc'
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
  runtime_type = 'io.containerd.runc.v2'
[plugins.'io.containerd.grpc.v1.cri'.containerd.runtimes.nvidia]
  runtime_type = 'io.containerd.runc.v2'
"""
    facts = facts_from_dump(dump, source="file", source_name="dump")
    assert sorted(facts["runtimes"]) == ["runc"]
    assert facts["ignored_runtimes"] == {CRI_PLUGIN_V2: ["nvidia"]}


@pytest.mark.parametrize(
    "dump,message",
    [
        ("version = 2\n[plugins", "not valid TOML"),
        ('version = "two"', "version is a string"),
        ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\nruntimes = "x"', "containerd.runtimes is a string"),
        ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\noptions = []', "nvidia.options is an array"),
        ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\ndefault_runtime_name = 3', "default_runtime_name is a int"),
        ('version = 2\nplugins = 1', "plugins is a int"),
        ("   \n", "printed nothing"),
        ('[plugins."io.containerd.grpc.v1.cri".containerd]\ndefault_runtime_name = "runc"', "no top-level version"),
    ],
)
def test_malformed_dumps_are_refused_with_the_input_named(dump, message):
    with pytest.raises(RuntimeGateError) as raised:
        facts_from_dump(dump, source="file", source_name="dump_file '/tmp/x.toml'")
    assert message in str(raised.value)
    assert "dump_file '/tmp/x.toml'" in str(raised.value)


def test_disabled_cri_plugin_is_a_fact():
    dump = 'version = 2\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n'
    assert facts_from_dump(dump, source="file", source_name="dump")["cri_disabled"] is True


@pytest.mark.parametrize(
    "output,version",
    [
        ("containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3", "1.6.20"),
        ("containerd containerd.io 1.7.27 05044ec0a9a75232cad458027ca83437aae3f4da", "1.7.27"),
        ("containerd github.com/containerd/containerd/v2 v2.2.0 1c4457e00facac03ce1d75f7b6777a7a851e5c41", "2.2.0"),
        ("", None),
        ("containerd unknown", None),
    ],
)
def test_containerd_version(output, version):
    assert parse_containerd_version(output) == version


def test_root_config_summary_reads_the_files_own_version_and_imports():
    summary = root_config_summary('version = 3\nimports = ["/etc/containerd/conf.d/*.toml"]\n', "/etc/containerd/config.toml")
    assert summary["version"] == 3 and summary["imports"] == ["/etc/containerd/conf.d/*.toml"]
    assert root_config_summary(None, "/x")["exists"] is False
    assert root_config_summary("[broken", "/x")["parse_error"]


# --- containerd 1.6, live -------------------------------------------------------------------------

def _containerd():
    return require_command("containerd", "containerd")


def _live_dump(tree, config="config.toml"):
    completed = subprocess.run(
        [_containerd(), "--config", str(tree / config), "config", "dump"], capture_output=True, text=True, check=False
    )
    return completed


LIVE_TREES = {
    # name: ({file: text}, expected default, expected runtimes)
    "root-with-everything": (
        {
            "config.toml": """version = 2
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
    SystemdCgroup = true
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
    BinaryName = "/usr/bin/nvidia-container-runtime"
"""
        },
        "runc",
        {"runc": None, "nvidia": NVIDIA_BIN},
    ),
    "dropin-replaces-cri-table": (
        {
            "config.toml": """version = 2
imports = ["{tree}/conf.d/*.toml"]
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
""",
            "conf.d/99-nvidia.toml": """version = 2
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
""",
        },
        "runc",
        {"nvidia": None},
    ),
    "v3-file-on-1x": (
        {
            "config.toml": """version = 3
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
"""
        },
        "runc",
        {"runc": None},
    ),
}


@pytest.mark.parametrize("name", sorted(LIVE_TREES))
def test_live_1_6_dump(tmp_path, name):
    files, default_runtime, runtimes = LIVE_TREES[name]
    for relative, text in files.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text.replace("{tree}", str(tmp_path)))
    completed = _live_dump(tmp_path)
    assert completed.returncode == 0, completed.stderr
    facts = facts_from_dump(completed.stdout, source="command", source_name="containerd config dump")
    assert facts["dump_version"] == 2 and facts["cri_runtime_plugin"] == CRI_PLUGIN_V2
    assert facts["default_runtime_name"] == default_runtime
    assert {name: runtime["binary_name"] for name, runtime in facts["runtimes"].items()} == runtimes
