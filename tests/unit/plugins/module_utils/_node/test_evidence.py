"""The containerd_facts node gathering on real trees: host_root, registry credentials redacted, the CRI status codec."""
import json
import os

import pytest
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node import redaction as node_redaction
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.cri_status import (
    decode_status_response,
    encode_status_request,
)
from support.node_trees import executable, node_tree
from support.tools import require_tool


def test_status_request_and_malformed_responses():
    # The live decoding is exercised against a real daemon in tests/integration/daemon; here only what no
    # daemon sends: truncated or mistyped bytes must be a ValueError (the view is then unknown), never a guess.
    assert encode_status_request(verbose=True) == b"\x08\x01"
    assert decode_status_response(b"") == {"status": {"conditions": []}, "info": {}}
    for broken in (b"\x0a\x05ab", b"\x08", b"\x0d\x01\x02", b"\x0b", b"\x10\x01\x12\x02\x08\x01"):
        with pytest.raises(ValueError):
            decode_status_response(broken)


# ------------------------------------------------------------------------ host_root: the node's / elsewhere


def test_module_reads_root_config_and_passes_host_root_to_containerd(tmp_path):
    from ansible_collections.gpufleet.runtime_gate.plugins.modules.containerd_facts import gather, gather_surroundings

    host = node_tree(tmp_path)
    # A wrapper as containerd_bin sees the node path and RUNTIME_GATE_HOST_ROOT (what containerd-at-etc reads).
    fake = executable(tmp_path / "containerd", '#!/bin/sh\n[ "$1" = --version ] && { echo "containerd x 1.6.20 y"; exit 0; }\n'
                                               'echo "# $RUNTIME_GATE_HOST_ROOT $2"\necho "version = 2"\n')
    params = {"containerd_bin": fake, "config_path": "/etc/containerd/config.toml", "dump_file": None, "timeout": 10,
              "dropin_dirs": [], "cdi_spec_dirs": ["/etc/cdi"], "ask_daemon": False, "socket": "/nonexistent.sock",
              "crictl_bin": "crictl", "host_root": str(host)}
    evidence, error = gather(params)
    assert error is None, error
    assert evidence["dump_text"].splitlines()[0] == f"# {host} /etc/containerd/config.toml"
    # The root is read with its imports, before the dump: config_files[0], the one copy of its text the node sends.
    assert evidence["config_files"][0]["path"] == "/etc/containerd/config.toml"
    assert evidence["config_files"][0]["text"].startswith("version = 2\nimports")
    evidence = gather_surroundings(params, evidence)
    assert evidence["cdi_dirs"][0]["entries"][0]["name"] == "nvidia.yaml"


REGISTRY_CONFIG = '''version = 2
# password = "old-secret-1"
[plugins."io.containerd.grpc.v1.cri".registry.configs."reg.example".auth]
  username = "robot"
  password = "s3cr3t-PW"
  Auth = 'cm9ib3Q6czNjcjN0'
  identitytoken = "id-token-2"
[plugins."io.containerd.cri.v1.images".registry.configs."other".auth]
  "token" = "tok-3"
  registrytoken = """multi
line-4"""
[plugins."io.containerd.cri.v1.images".registry.configs."x"]
  tls = { insecure_skip_verify = true, password = "inline-5" }
  note = "a, token = 'inside-6'"
  auth.password = "dotted-7"
  BinaryName = "/usr/bin/runc"
'''


def test_secrets_are_redacted_keeping_the_toml_valid_and_its_lines():
    import tomllib

    redacted = node_redaction.redact_toml_secrets(REGISTRY_CONFIG)
    for secret in ("old-secret-1", "s3cr3t-PW", "cm9ib3Q6czNjcjN0", "id-token-2", "tok-3", "line-4", "inline-5",
                   "inside-6", "dotted-7"):
        assert secret not in redacted, secret
    assert redacted.count("\n") == REGISTRY_CONFIG.count("\n")
    document = tomllib.loads(redacted)
    auth = document["plugins"]["io.containerd.grpc.v1.cri"]["registry"]["configs"]["reg.example"]["auth"]
    assert auth == {"username": "robot", "password": "<redacted>", "Auth": "<redacted>", "identitytoken": "<redacted>"}
    other = document["plugins"]["io.containerd.cri.v1.images"]["registry"]["configs"]
    assert other["x"]["tls"] == {"insecure_skip_verify": True, "password": "<redacted>"}
    assert other["x"]["auth"]["password"] == "<redacted>" and other["x"]["note"] == "a, token = '<redacted>'"
    assert other["x"]["BinaryName"] == "/usr/bin/runc" and other["other"]["auth"]["token"] == "<redacted>"
    daemon_json = '{"config": {"registry": {"configs": {"r": {"auth": {"username": "u", "password": "p\\"w", "auth": "YQ=="}}}}}}'
    assert json.loads(node_redaction.redact_json_secrets(daemon_json))["config"]["registry"]["configs"]["r"]["auth"] == {
        "username": "u", "password": "<redacted>", "auth": "<redacted>"}


@pytest.mark.parametrize("containerd_bin", ["containerd", "/usr/bin/containerd"])
@pytest.mark.components
def test_the_containerd_binary_itself_cannot_stand_for_another_root(tmp_path, containerd_bin):
    """containerd ignores RUNTIME_GATE_HOST_ROOT: run as the node's wrapper it would dump this machine's config."""
    require_tool(os.access("/usr/bin/containerd", os.X_OK), "needs Debian's containerd (a compiled program)")
    from ansible_collections.gpufleet.runtime_gate.plugins.modules.containerd_facts import gather

    params = {"containerd_bin": containerd_bin, "config_path": "/etc/containerd/config.toml", "dump_file": None, "timeout": 10,
              "dropin_dirs": [], "cdi_spec_dirs": [], "ask_daemon": False, "socket": "/nonexistent.sock",
              "crictl_bin": "crictl", "host_root": str(node_tree(tmp_path))}
    evidence, error = gather(params)
    assert evidence is None
    assert f"containerd_bin '{containerd_bin}' is a compiled program" in error and "not a wrapper" in error
