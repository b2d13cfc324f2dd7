"""Which containerd printed a dump: stated (the node's --version, the option, a version file) or inferred from the
dump's own version, never borrowed from a binary that did not print it; dump versions no containerd prints are refused."""
import pytest

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import facts_from_dump
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError

RUNTIMES_V2 = '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\nruntime_type = "io.containerd.runc.v2"\n'
RUNTIMES_V3 = '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]\nruntime_type = "io.containerd.runc.v2"\n'


def facts(version, body, **stated):
    return facts_from_dump(f"version = {version}\n" + body, source="file", source_name="dump_file 'x'", **stated)


@pytest.mark.parametrize("version, body, family", [(2, RUNTIMES_V2, "1.x"), (3, RUNTIMES_V3, "2.0-2.2"), (4, RUNTIMES_V3, "2.3 or later")])
def test_the_family_is_inferred_from_the_dump_and_said_so(version, body, family):
    inferred = facts(version, body)
    assert inferred["containerd_version"] is None
    assert inferred["containerd_release"]["text"] == f"{family} (inferred from the dump's version = {version})"
    assert inferred["version_source"] == "inferred from the dump"


def test_a_stated_version_is_exact_and_names_its_source():
    stated = facts(3, RUNTIMES_V3, version_text="containerd github.com/containerd/containerd/v2 v2.2.9 abc",
                   version_source="version file '/x/containerd-version.txt'")
    assert stated["containerd_version"] == "2.2.9"
    assert stated["version_source"] == "version file '/x/containerd-version.txt'"


@pytest.mark.parametrize("version", [0, -1, 1, 5])
def test_a_dump_version_no_containerd_prints_is_refused(version):
    with pytest.raises(RuntimeGateError, match=f"version = {version} is no version `containerd config dump` prints"):
        facts(version, RUNTIMES_V2)


def test_a_version_the_dump_contradicts_is_refused():
    with pytest.raises(RuntimeGateError, match="not from the same containerd"):
        facts(4, RUNTIMES_V3, version_text="1.6.20", version_source="the containerd_version option")
