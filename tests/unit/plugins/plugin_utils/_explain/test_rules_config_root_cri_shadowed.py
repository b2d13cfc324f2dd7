"""ROOT_CRI_SETTING_SHADOWED (issue 13 item 7): on 1.x a drop-in carrying the root's CRI table hides a later edit of the
root's CRI settings. Real containerd 1.6 facts of a real tree (the node module's gather, the controller's judge)."""
import pytest
from support.judged_trees import V2_FULL_DROPIN, codes, gathered_facts, only, verdict_of, write_tree

# Every test here runs real containerd (or its dumps): `make test` only.
pytestmark = pytest.mark.components

ROOT = """\
version = 2
imports = ["{d}/conf.d/*.toml"]

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.9"

[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
"""
# What the role's drop-in carried when it ran, before kubespray re-rendered the root with a new pause image.
DROPIN = V2_FULL_DROPIN.replace('[plugins."io.containerd.grpc.v1.cri".containerd]\n',
                                '[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "registry.k8s.io/pause:3.8"\n\n'
                                '[plugins."io.containerd.grpc.v1.cri".containerd]\n', 1)


def test_a_root_cri_setting_a_dropin_shadows_is_named(tmp_path):
    config = write_tree(tmp_path, {"config.toml": ROOT.replace("{d}", str(tmp_path)), "conf.d/99-gpufleet.toml": DROPIN})
    verdict = verdict_of(gathered_facts(config))
    finding = only(verdict, "ROOT_CRI_SETTING_SHADOWED")
    assert finding["severity"] == "warning"
    assert finding["evidence"]["shadowed_settings"] == ["sandbox_image"]
    assert finding["evidence"]["file"] == f"{tmp_path}/conf.d/99-gpufleet.toml" and finding["evidence"]["root"] == str(config)


def test_equal_values_are_not_shadowed(tmp_path):
    config = write_tree(tmp_path, {"config.toml": ROOT.replace("{d}", str(tmp_path)),
                                   "conf.d/99-gpufleet.toml": DROPIN.replace("pause:3.8", "pause:3.9")})
    assert "ROOT_CRI_SETTING_SHADOWED" not in codes(verdict_of(gathered_facts(config)))
