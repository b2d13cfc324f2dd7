"""New preset runtimes start from a copy of runc's table as the files load it, on every config version (nvidia-ctk's
AddRuntime): the pure rules here; tests/integration/role/test_role_containerd_2x.py and test_role_containerd_16.py
prove what real daemons then serve."""
import tomllib

import pytest

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.inherit import (
    inherit_source,
    merged_file_runtimes,
    with_inherited,
)
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.inputs import expand_runtimes
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.render import make_plan

V3 = "io.containerd.cri.v1.runtime"
RUNC = {"runtime_type": "io.containerd.runc.v2", "pod_annotations": ["a"], "options": {"SystemdCgroup": True}}


@pytest.mark.parametrize(("defined", "default", "expected"), [
    ({"runc": {}, "crun": {}}, "runc", "runc"),
    ({"runc": {}, "crun": {}}, "crun", "crun"),         # the default first
    ({"runc": {}, "nvidia": {}}, "nvidia", "runc"),     # never an nvidia* default
    ({"crun": {}}, "runc", "crun"),
    ({"kata": {}}, "runc", None),                       # nothing defined to copy: the requested table alone
])
def test_the_source_is_nvidia_ctks_low_level_runtime_order(defined, default, expected):
    assert inherit_source(defined, default) == expected


def test_files_merge_key_by_key_in_load_order_whatever_their_version():
    documents = {
        "/a": {"version": 2, "plugins": {"io.containerd.grpc.v1.cri": {"containerd": {"runtimes": {"runc": {"options": {"SystemdCgroup": True}}}}}}},
        "/b": {"version": 3, "plugins": {V3: {"containerd": {"runtimes": {"runc": {"options": {"NoPivotRoot": True}}}}}}},
    }
    assert merged_file_runtimes(["/a", "/b"], documents) == {"runc": {"options": {"SystemdCgroup": True, "NoPivotRoot": True}}}


def test_only_new_inheriting_runtimes_copy_and_the_inputs_keys_win():
    requested = {"nvidia": {"runtime_type": "io.containerd.runc.v2", "options": {"BinaryName": "/x"}},
                 "kata": {"runtime_type": "io.containerd.kata.v2"},
                 "nvidia-cdi": {"runtime_type": "io.containerd.runc.v2", "options": {"BinaryName": "/y"}}}
    defined = {"runc": RUNC, "nvidia-cdi": {"options": {"BinaryName": "/old"}}}
    tables, sources = with_inherited(requested, defined, inherits={"nvidia", "nvidia-cdi"}, default_runtime="runc")
    assert tables["nvidia"] == {"runtime_type": "io.containerd.runc.v2", "pod_annotations": ["a"],
                                "options": {"SystemdCgroup": True, "BinaryName": "/x"}}
    assert tables["kata"] == requested["kata"]              # not a preset runtime
    assert tables["nvidia-cdi"] == requested["nvidia-cdi"]  # already defined: containerd merges the drop-in into it
    assert sources == {"nvidia": "runc"}


@pytest.mark.parametrize(("version", "root_version"), [("2.2.9", 3), ("2.3.4", 4), ("2.4.2", 4), ("2.2.9", 2)])
def test_the_nvidia_preset_copies_runc_on_2x_as_on_1x(version, root_version):
    key = "io.containerd.grpc.v1.cri" if root_version == 2 else V3
    root = (f'version = {root_version}\nimports = ["/etc/containerd/conf.d/*.toml"]\n'
            f'[plugins."{key}".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
            f'[plugins."{key}".containerd.runtimes.runc.options]\n  SystemdCgroup = true\n')
    plan = make_plan(root_path="/etc/containerd/config.toml", root_text=root, containerd_version=version,
                     runtimes=expand_runtimes([], presets=["nvidia"]), dropin_dir="/etc/containerd/conf.d",
                     dropin_name="99-gpufleet.toml", current_default_runtime="runc")
    assert plan["errors"] == []
    dropin = tomllib.loads(plan["files"][0]["content"])
    runtimes = dropin["plugins"][key]["containerd"]["runtimes"]
    assert {name: table["options"] for name, table in runtimes.items()} == {
        "nvidia": {"SystemdCgroup": True, "BinaryName": "/usr/bin/nvidia-container-runtime"},
        "nvidia-cdi": {"SystemdCgroup": True, "BinaryName": "/usr/bin/nvidia-container-runtime.cdi"},
        "nvidia-legacy": {"SystemdCgroup": True, "BinaryName": "/usr/bin/nvidia-container-runtime.legacy"}}
    assert plan["inherited"] == dict.fromkeys(runtimes, "runc")
