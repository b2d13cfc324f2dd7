"""The containerd_runtimes role's inputs, refused in the plan (check mode included) before anything is read or written.

Python's ``$`` also matches before a trailing newline, so a pattern check must match the whole string; and the
drop-in is a file containerd loads as root, so it belongs under the root config's directory, nowhere else.
"""
import pytest

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.render import make_plan, runtime_name_errors

ROOT_V2 = 'version = 2\n\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'


def plan_for(**overrides):
    arguments = dict(root_path="/etc/containerd/config.toml", root_text=ROOT_V2, containerd_version="1.6.20",
                     runtimes=[{"name": "nvidia", "binary_name": "/usr/bin/nvidia-container-runtime"}],
                     dropin_dir="/etc/containerd/conf.d", dropin_name="99-gpufleet.toml", current_default_runtime="runc")
    arguments.update(overrides)
    return make_plan(**arguments)


def test_the_defaults_plan_cleanly():
    plan = plan_for()
    assert plan["errors"] == [] and [item["path"] for item in plan["files"]][0] == "/etc/containerd/conf.d/99-gpufleet.toml"


@pytest.mark.parametrize("name", ["nvidia\n", "nvidia\n\n", "\nnvidia", "nvi\ndia"])
def test_a_runtime_name_with_a_newline_is_not_a_dns_label(name):
    errors = runtime_name_errors([{"name": name}])
    assert errors == [f"option runtimes: runtime name {name!r} is not a DNS-1123 label (lower-case a-z, 0-9, "
                      "'-', at most 63 characters, starting and ending alphanumeric): no RuntimeClass handler could "
                      "select it"]
    assert plan_for(runtimes=[{"name": name}])["errors"] == errors


@pytest.mark.parametrize("dropin_name", ["99-gpufleet.toml\n", "99-gpu\nfleet.toml", "99-gpufleet\n.toml",
                                         "..toml", ".hidden.toml", "99 gpufleet.toml", "99-gpufleet\t.toml"])
def test_a_dropin_name_must_be_a_plain_file_name(dropin_name):
    plan = plan_for(dropin_name=dropin_name)
    assert f"option dropin_name {dropin_name!r} must be a plain file name ending in .toml" in \
        plan["errors"][0], plan["errors"]
    assert plan["files"] == []


@pytest.mark.parametrize("dropin_dir", ["/etc/cron.d", "/etc/containerd/../cron.d", "/etc", "/etc/containerd-evil",
                                        "/root/.ssh"])
def test_a_dropin_dir_outside_the_root_configs_directory_is_refused(dropin_dir):
    plan = plan_for(dropin_dir=dropin_dir, import_pattern=dropin_dir.rstrip("/") + "/*.toml")
    assert any(error.startswith(f"option dropin_dir {dropin_dir!r} is outside /etc/containerd, the "
                                "directory of the root config /etc/containerd/config.toml")
               for error in plan["errors"]), plan["errors"]
    assert plan["files"] == []


@pytest.mark.parametrize("dropin_dir", ["/etc/containerd/conf.d\n", "/etc/containerd/co\nnf.d"])
def test_a_dropin_dir_with_a_newline_is_refused(dropin_dir):
    plan = plan_for(dropin_dir=dropin_dir)
    assert any(error.startswith(f"option dropin_dir {dropin_dir!r} holds a control character")
               for error in plan["errors"]), plan["errors"]
    assert plan["files"] == []


@pytest.mark.parametrize("root_path,dropin_dir", [
    ("/etc/containerd/config.toml", "/etc/containerd/conf.d"),
    ("/etc/containerd/config.toml", "/etc/containerd/certs/conf.d"),
    ("/var/lib/rancher/k3s/agent/etc/containerd/config.toml", "/var/lib/rancher/k3s/agent/etc/containerd/conf.d"),
])
def test_a_dropin_dir_under_the_root_configs_directory_is_fine(root_path, dropin_dir):
    assert plan_for(root_path=root_path, dropin_dir=dropin_dir)["errors"] == []
