"""Dump parsing and facts, on real `containerd config dump` outputs.

Every dump here is printed at test time by a real binary (Debian's 1.6 and the built 1.7, 2.2, 2.3 and 2.4) for a
scenario tree of tests/fixtures/containerd (support.containerd_trees); more 1.6 trees are dumped live below.
"""
import subprocess

import pytest
from support.containerd_trees import dumped, scenarios
from support.tools import require_command

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import (
    CRI_PLUGIN_V2,
    CRI_RUNTIME_PLUGIN_V3,
    facts_from_dump,
    parse_containerd_version,
    root_config_summary,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError

NVIDIA_BIN = "/usr/bin/nvidia-container-runtime"
CDI_BIN = "/usr/bin/nvidia-container-runtime.cdi"
ALL_THREE = {"runc": None, "nvidia": NVIDIA_BIN, "nvidia-cdi": CDI_BIN}
RUNC_NVIDIA = {"runc": None, "nvidia": NVIDIA_BIN}
RUNC_ONLY = {"runc": None}
RELEASES = ("1.6", "1.7", "2.2", "2.3", "2.4")
V2, V3 = (2, CRI_PLUGIN_V2), (3, CRI_RUNTIME_PLUGIN_V3)
V4 = (4, CRI_RUNTIME_PLUGIN_V3)

# (release, scenario) -> (dump version, plugin key, default runtime, {runtime: BinaryName}), or the refusal containerd
# prints on stderr; read off the trees (tests/fixtures/containerd/README.md) and what each release does with a config
# version, not off the parser.
REFUSES_V3_ON_1_7 = "unsupported config version `3`"
REFUSES_V4_ON_1_7 = "unsupported config version `4`"
REFUSES_V4_ON_2_2 = "expected containerd config version equal to or less than `3`, got `4`"
PER_FAMILY = {
    # 1.6.20 reads version 2 only and ignores a version 3/4 file without a word: only its built-in runc is left.
    "1.6": {"S1": V2 + ("runc", RUNC_ONLY), "S1v4": V2 + ("runc", RUNC_ONLY), "S1-after-edit": V2 + ("runc", RUNC_ONLY),
            "S3full": V2 + ("runc", ALL_THREE), "S3full-after-edit": V2 + ("runc", RUNC_NVIDIA),
            "S5": V2 + ("runc", RUNC_ONLY), "S6": V2 + ("runc", RUNC_ONLY), "S6-v2": V2 + ("runc", RUNC_NVIDIA)},
    "1.7": {"S1": REFUSES_V3_ON_1_7, "S1v4": REFUSES_V4_ON_1_7, "S1-after-edit": REFUSES_V3_ON_1_7,
            "S3full": V2 + ("runc", ALL_THREE), "S3full-after-edit": V2 + ("runc", RUNC_NVIDIA),
            "S5": REFUSES_V3_ON_1_7, "S6": REFUSES_V3_ON_1_7, "S6-v2": V2 + ("runc", RUNC_NVIDIA)},
    "2.2": {"S1": V3 + ("runc", ALL_THREE), "S1v4": REFUSES_V4_ON_2_2, "S1-after-edit": V3 + ("runc", RUNC_NVIDIA),
            "S3full": V3 + ("runc", ALL_THREE), "S3full-after-edit": V3 + ("runc", RUNC_NVIDIA),
            "S5": V3 + ("nvidia", ALL_THREE), "S6": V3 + ("runc", RUNC_NVIDIA), "S6-v2": V3 + ("runc", RUNC_NVIDIA)},
}
# 2.3 and 2.4 migrate every file to version 4 and load every tree.
PER_FAMILY["2.3"] = PER_FAMILY["2.4"] = {scenario: V4 + expected[2:] for scenario, expected in PER_FAMILY["2.2"].items()
                                         if not isinstance(expected, str)} | {"S1v4": V4 + ("runc", ALL_THREE)}
EXPECTATIONS = {(release, scenario): expected for release in RELEASES for scenario, expected in PER_FAMILY[release].items()}


def test_every_tree_is_covered_on_every_release():
    assert scenarios(), "no scenario trees under tests/fixtures/containerd/trees"
    for release in RELEASES:
        assert set(PER_FAMILY[release]) == set(scenarios()), release


@pytest.mark.parametrize("release,scenario", sorted(EXPECTATIONS))
@pytest.mark.components
def test_real_dump_facts(release, scenario, tmp_path):
    dump = dumped(scenario, release, tmp_path)
    expected = EXPECTATIONS[(release, scenario)]
    if isinstance(expected, str):
        assert dump.returncode != 0 and dump.text == "", (dump.returncode, dump.text[:200])
        assert expected in dump.stderr, dump.stderr
        # An empty dump is refused, never read as "no runtimes".
        with pytest.raises(RuntimeGateError, match="printed nothing"):
            facts_from_dump(dump.text, source="command", source_name="`containerd config dump`")
        return
    assert dump.returncode == 0, dump.stderr
    facts = facts_from_dump(dump.text, source="file", source_name=f"dump_file '{dump.path}'")
    dump_version, plugin_key, default_runtime, runtimes = expected
    assert facts["dump_version"] == dump_version
    assert facts["cri_runtime_plugin"] == plugin_key
    assert facts["default_runtime_name"] == default_runtime
    assert {name: runtime["binary_name"] for name, runtime in facts["runtimes"].items()} == runtimes
    assert all(runtime["runtime_type"] == "io.containerd.runc.v2" for runtime in facts["runtimes"].values())
    assert facts["cri_disabled"] is False
    assert facts["ignored_runtimes"] == {}
    # Judged by itself, the dump names its release family only (no binary was asked).
    assert facts["containerd_version"] is None and facts["containerd_release"]["source"] == "inferred from the dump"


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
@pytest.mark.components
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
