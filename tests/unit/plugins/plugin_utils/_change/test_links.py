"""Symbolic links on the way to the role's files (issue 22 item 8); real links on 1.6 in
tests/integration/role/test_role_containerd_16.py (hosts root-link, dropin-dir-link)."""
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.links import link_errors, real_path

ROOT = "/etc/containerd/config.toml"
FILES = [{"path": "/etc/containerd/conf.d/99-gpufleet.toml"}, {"path": ROOT}]


def test_a_dropin_dir_linked_outside_the_root_directory_is_refused_naming_both():
    realpaths = {"/etc/containerd": "/etc/containerd", "/etc/containerd/conf.d": "/srv/shared"}
    (error,) = link_errors(FILES, root_path=ROOT, realpaths=realpaths)
    assert "/etc/containerd/conf.d/99-gpufleet.toml leads through a symbolic link to /srv/shared/99-gpufleet.toml" in error


def test_links_inside_and_a_linked_root_are_written_through():
    realpaths = {"/etc/containerd": "/data/containerd", "/etc/containerd/conf.d": "/data/containerd/conf.d",
                 ROOT: "/opt/k8s/containerd.toml"}
    assert link_errors(FILES, root_path=ROOT, realpaths=realpaths) == []


def test_a_dropin_file_that_is_a_link_is_judged_by_its_own_target():
    realpaths = {"/etc/containerd": "/etc/containerd", "/etc/containerd/conf.d": "/etc/containerd/conf.d",
                 "/etc/containerd/conf.d/99-gpufleet.toml": "/root/.ssh/authorized_keys"}
    assert real_path(FILES[0]["path"], realpaths) == "/root/.ssh/authorized_keys"
    assert len(link_errors(FILES, root_path=ROOT, realpaths=realpaths)) == 1


def test_a_lookalike_prefix_is_not_inside():
    realpaths = {"/etc/containerd": "/etc/containerd", "/etc/containerd/conf.d": "/etc/containerd-evil"}
    assert len(link_errors(FILES, root_path=ROOT, realpaths=realpaths)) == 1
