"""Registry credentials never leave the node (plugins/module_utils/_node/redaction.py), however they are written:
a value of the wrong type, a key name written with TOML escapes, a user:password inside a mirror URL, containerd's own
error message quoting the value. The texts stay valid TOML with their line count, so findings still point at lines."""
import json
import os
import tomllib
from pathlib import Path

import pytest
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node import imports as node_imports
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node import redaction as node_redaction
from support.paths import REPO_ROOT
from support.tools import require_tool

AUTH = '[plugins."io.containerd.grpc.v1.cri".registry.configs."reg.example".auth]\n'
WRONG_TYPES = AUTH + '''  username = "robot"
  password = 918273645
  identitytoken = ["wrong-type-array-1", 'wrong-type-array-2']
  registrytoken = [
    "wrong-type-multiline-3",
  ]
  token = true
[plugins."io.containerd.grpc.v1.cri".registry.configs."other"]
  auth = { username = "u", password = 55512345 }
'''
ESCAPED_KEYS = AUTH + r'''  "pass\u0077ord" = "escaped-key-1"
  "\u0074oken" = 'escaped-key-2'
  'identitytoken' = "literal-key-3"
[plugins."io.containerd.cri.v1.images".registry.configs."x"]
  auth."pass\U00000077ord" = "escaped-dotted-4"
  tls = { "\u0070assword" = "escaped-inline-5", insecure_skip_verify = false }
'''
MIRROR_URLS = '''version = 2
[plugins."io.containerd.grpc.v1.cri".registry.mirrors."docker.io"]
  endpoint = ["https://mirror-user:mirror-pass-1@mirror.example", "http://bare-token-2@10.0.0.9:5000/v2"]
[plugins."io.containerd.grpc.v1.cri".registry.configs."mirror.example"]
  note = "pulled via https://note-user:note-pass-3@mirror.example"
# endpoint = ["https://old-user:old-pass-4@mirror.example"]
'''


def redacted(text):
    result = node_redaction.redact_toml_secrets(text)
    assert result.count("\n") == text.count("\n"), "the line count changed: findings would point at the wrong lines"
    return result, tomllib.loads(result)


def test_credential_values_of_any_type_are_redacted():
    text, document = redacted("version = 2\n" + WRONG_TYPES)
    for secret in ("918273645", "wrong-type-array-1", "wrong-type-array-2", "wrong-type-multiline-3", "55512345"):
        assert secret not in text, secret
    configs = document["plugins"]["io.containerd.grpc.v1.cri"]["registry"]["configs"]
    assert configs["reg.example"]["auth"]["username"] == "robot"
    assert configs["reg.example"]["auth"]["password"] == "<redacted>"
    assert configs["reg.example"]["auth"]["token"] == "<redacted>"
    assert configs["other"]["auth"] == {"username": "u", "password": "<redacted>"}


def test_key_names_written_with_toml_escapes_are_recognised():
    text, document = redacted("version = 2\n" + ESCAPED_KEYS)
    for secret in ("escaped-key-1", "escaped-key-2", "literal-key-3", "escaped-dotted-4", "escaped-inline-5"):
        assert secret not in text, secret
    x = document["plugins"]["io.containerd.cri.v1.images"]["registry"]["configs"]["x"]
    assert x["auth"] == {"password": "<redacted>"} and x["tls"]["insecure_skip_verify"] is False


def test_user_and_password_in_urls_are_redacted_keeping_the_host():
    text, document = redacted(MIRROR_URLS)
    for secret in ("mirror-user", "mirror-pass-1", "bare-token-2", "note-pass-3", "old-pass-4"):
        assert secret not in text, secret
    endpoints = document["plugins"]["io.containerd.grpc.v1.cri"]["registry"]["mirrors"]["docker.io"]["endpoint"]
    assert endpoints == ["https://<redacted>@mirror.example", "http://<redacted>@10.0.0.9:5000/v2"]
    daemon_json = json.dumps({"config": {"registry": {"mirrors": {"docker.io": {"endpoint": ["https://a:json-pass-5@m.example"]}}}}})
    assert "json-pass-5" not in node_redaction.redact_json_secrets(daemon_json)


@pytest.mark.parametrize("broken", ['password = "unterminated-1\n', "password = [\"unclosed-array-2\",\n",
                                    'auth = { password = "inline-unclosed-3"\n', '"pass\\u0077ord" = 12 34 56 secret-4\n'])
def test_a_file_that_is_not_toml_still_ships_no_credential(broken):
    original = AUTH + broken + 'BinaryName = "/usr/bin/runc"\n'
    text = node_redaction.redact_toml_secrets(original)
    for secret in ("unterminated-1", "unclosed-array-2", "inline-unclosed-3", "secret-4"):
        assert secret not in text, secret
    assert text.count("\n") == original.count("\n")


def test_config_files_without_credentials_pass_unchanged():
    """Every fixture tree's files read back as the same TOML document: the redaction changes nothing else."""
    fixtures = sorted(Path(REPO_ROOT, "tests", "fixtures").rglob("*.toml"))
    assert fixtures
    for path in fixtures:
        original = path.read_text()
        if any(key in original.lower() for key in node_redaction.SECRET_KEYS):
            continue
        assert node_redaction.redact_toml_secrets(original) == original, path


def test_messages_lose_the_credential_values_and_urls_they_quote():
    secrets = node_redaction.secrets_in(["version = 2\n" + WRONG_TYPES])
    message = ("containerd: (3, 3): Can't convert 918273645(int64) to string; also [wrong-type-array-1] and "
               "https://u:url-pass-6@mirror.example")
    scrubbed = node_redaction.redact_message(message, secrets)
    for secret in ("918273645", "wrong-type-array-1", "url-pass-6"):
        assert secret not in scrubbed, secret
    assert "(3, 3): Can't convert <redacted>(int64) to string" in scrubbed


AUTH_AS_STRING = '[plugins."io.containerd.grpc.v1.cri".registry.configs."r"]\n  auth = "auth-as-string-secret"\n'


@pytest.mark.parametrize(("dropin", "secrets"), [(WRONG_TYPES, ("918273645", "wrong-type", "55512345")),
                                                 (AUTH_AS_STRING, ("auth-as-string-secret",))])
@pytest.mark.components
def test_containerd_s_own_error_quoting_a_credential_never_reaches_the_message(tmp_path, dropin, secrets):
    """containerd 1.6 says `Can't convert 918273645(int64) to string` for a password of the wrong type, and
    `Can't convert auth-as-string-secret(string) to config.AuthConfig` for an auth table written as a string."""
    require_tool(os.access("/usr/bin/containerd", os.X_OK), "needs Debian's containerd 1.6")
    from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.evidence import gather

    (tmp_path / "conf.d").mkdir()
    config = tmp_path / "config.toml"
    config.write_text(f'version = 2\nimports = ["{tmp_path}/conf.d/*.toml"]\n')
    (tmp_path / "conf.d" / "10-registry.toml").write_text("version = 2\n" + dropin)
    params = {"containerd_bin": "/usr/bin/containerd", "config_path": str(config), "dump_file": None, "timeout": 30,
              "dropin_dirs": [], "cdi_spec_dirs": [], "ask_daemon": False, "socket": "/nonexistent.sock",
              "crictl_bin": "crictl", "host_root": None}
    evidence, error = gather(params)
    assert evidence is None and "exited 1" in error and "Can't convert <redacted>(" in error, error
    for secret in secrets:
        assert secret not in error, secret


SHADOW_LIKE = "root:$6$shadow-hash-8f2a$abc:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n"
PEM_LIKE = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC-pem-body-1\n-----END PRIVATE KEY-----\n"


@pytest.mark.parametrize("text, secret", [(SHADOW_LIKE, "shadow-hash-8f2a"), (PEM_LIKE, "pem-body-1")])
def test_an_import_of_a_file_that_is_not_toml_ships_no_text(tmp_path, text, secret):
    """An import may name any file the module can read as root: only a containerd config (TOML) is shipped."""
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d" / "10-not-a-config.toml").write_text(text)
    (tmp_path / "conf.d" / "20-config.toml").write_text('version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n')
    root = tmp_path / "config.toml"
    root.write_text(f'version = 2\nimports = ["{tmp_path}/conf.d/*.toml", "{tmp_path}/plain-secret"]\n')
    (tmp_path / "plain-secret").write_text(text)
    config_files, _globs = node_imports.walk_imports(str(root))
    evidence = node_redaction.redact_evidence({"config_files": config_files})
    assert secret not in json.dumps(evidence)
    by_name = {os.path.basename(entry["path"]): entry for entry in evidence["config_files"]}
    for name in ("10-not-a-config.toml", "plain-secret"):
        assert by_name[name]["text"] is None
        assert by_name[name]["error"] == ("is not TOML (line 1 is no table, key = value or comment), so it is no "
                                          "containerd configuration: its text is not shipped")
    assert by_name["20-config.toml"]["text"].startswith("version = 2\n") and by_name["config.toml"]["text"] is not None


def test_every_config_and_dump_in_the_repository_reads_as_toml_and_is_shipped():
    """The node's TOML reading must accept what containerd writes and reads, or a real config would go unseen."""
    paths = sorted(Path(REPO_ROOT, "tests", "fixtures").rglob("*.toml")) + sorted(Path(REPO_ROOT, "inventory").rglob("*.toml"))
    assert len(paths) > 10
    for path in paths:
        text = path.read_text()
        try:
            tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            continue  # a fixture that is broken on purpose
        entry = node_redaction.redact_evidence({"config_files": [{"path": str(path), "text": text, "error": None}]})["config_files"][0]
        assert entry["text"] is not None, (path, entry["error"])


def test_a_comment_after_a_table_header_is_redacted_too():
    text = AUTH.rstrip("\n") + '  # ] password = "after-header-1"\n  username = "u"\n'
    redacted_text, document = redacted(text)
    assert "after-header-1" not in redacted_text
    assert document["plugins"]["io.containerd.grpc.v1.cri"]["registry"]["configs"]["reg.example"]["auth"] == {"username": "u"}


HEADERS_1X = '''version = 2
[plugins."io.containerd.grpc.v1.cri".registry.headers]
  Authorization = ["Bearer header-secret-1"]
  X-Api-Key = ["header-secret-2", 'header-secret-3']
[plugins."io.containerd.grpc.v1.cri".registry.configs."reg.example"]
  headers.X-Other = ["header-secret-4"]
'''
HEADERS_INLINE = '''version = 2
[plugins."io.containerd.grpc.v1.cri".registry]
  headers = { "X-Token" = ["header-secret-5"], Authorization = ["Basic header-secret-6"] }
'''
HOSTS_TOML = '''server = "https://registry.example"
[host."https://mirror.example".header]
  authorization = "Bearer header-secret-7"
  x-custom = ["header-secret-8"]
'''


@pytest.mark.parametrize("text", [HEADERS_1X, HEADERS_INLINE, HOSTS_TOML], ids=["table-and-dotted", "inline", "hosts.toml"])
def test_registry_header_values_are_redacted_like_passwords_keeping_arrays_and_names(text):
    # Issue 22 item 7: Authorization and X-Api-Key values reached the facts result, the role's --diff and -vvv.
    redacted, secrets = node_redaction.redact_toml(text)
    assert "header-secret" not in redacted and all("header-secret" in secret for secret in secrets) and secrets
    assert redacted.count("\n") == text.count("\n")
    before, after = tomllib.loads(text), tomllib.loads(redacted)
    assert json.dumps(after).count("<redacted>") == len(secrets)  # every value replaced, each array still an array
    assert sorted(_key_paths(after)) == sorted(_key_paths(before))


def _key_paths(document, prefix=()):
    for key, value in document.items():
        yield prefix + (key,)
        if isinstance(value, dict):
            yield from _key_paths(value, prefix + (key,))


def test_header_values_in_the_daemon_s_json_status_are_redacted():
    status = json.dumps({"config": {"registry": {"headers": {"Authorization": ["Bearer header-secret-9"]},
                                                 "mirrors": {"docker.io": {"endpoint": ["https://m"]}}}}})
    redacted = node_redaction.redact_json_secrets(status)
    assert "header-secret" not in redacted
    assert json.loads(redacted)["config"]["registry"] == {"headers": {"Authorization": ["<redacted>"]},
                                                          "mirrors": {"docker.io": {"endpoint": ["https://m"]}}}


@pytest.mark.components
def test_a_real_dump_with_registry_headers_ships_no_header_value(tmp_path):
    from support.containerd_trees import dumped

    dump = dumped("S6-v2", "1.7", tmp_path, extra={"config.toml": HEADERS_1X})  # the real containerd 1.7 prints it
    assert dump.returncode == 0 and "header-secret-1" in dump.text, dump.stderr
    evidence = node_redaction.redact_evidence({"dump_text": dump.text, "config_files": [{"text": HEADERS_1X}]})
    assert "header-secret" not in json.dumps(evidence)
    assert tomllib.loads(evidence["dump_text"])["plugins"]["io.containerd.grpc.v1.cri"]["registry"]["headers"] == {
        "Authorization": ["<redacted>"], "X-Api-Key": ["<redacted>", "<redacted>"]}
