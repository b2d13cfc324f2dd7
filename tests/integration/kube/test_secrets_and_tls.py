"""Credentials never leak, and TLS is verified unless the playbook says otherwise.

crosscheck.yml runs with -vvv against the stand-in with a known token, a known client key (as a file and
inline in a kubeconfig), and a rejected token; stdout, stderr and every file the run wrote (verdicts,
report.json, junit.xml, report.html) are searched for them.
"""
import base64
import json
import signal
import socket
import subprocess
import sys

import pytest
from kube_runs import DEMO, DEMO_OK_HOSTS, ansible_env, load_demo_cluster, run_crosscheck, run_module
from support.paths import REPO_ROOT

from support.kube_standin import KubeStandIn, make_tls_material

WRONG_TOKEN = "rejected-token-3c1d9f0a7b"
SKIP_TLS_HINT = "the kubeconfig's insecure-skip-tls-verify is ignored unless validate_certs is false"
INSECURE_WARNING = "validate_certs is false: the API server's certificate is not verified"


def kubeconfig_with(kube_api, path, user, cluster_extra=None):
    cluster = {"server": kube_api.url, "certificate-authority": str(kube_api.ca_path), **(cluster_extra or {})}
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c", "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": user}], "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    return path


def secret_fragments(text):
    """The whole secret and each long line of it (a PEM body shows line by line when it leaks)."""
    return [text.strip()] + [line for line in text.splitlines() if len(line) >= 16 and not line.startswith("-----")]


def assert_nowhere(run, secrets):
    places = {"output": run.output, **run.written}
    assert "report/report.json" in run.written, sorted(run.written)
    for secret in secrets:
        for fragment in secret_fragments(secret):
            for place, text in places.items():
                assert fragment not in text, f"a credential leaked into {place}"


@pytest.mark.parametrize("credentials", ["api-key-options", "kubeconfig-inline-client-key", "client-key-file",
                                         "rejected-token"])
def test_credentials_never_appear_in_vvv_output_or_reports(kube_api, kube_tls, tmp_path, credentials):
    load_demo_cluster(kube_api)
    client_key = kube_tls.client_key_path.read_text()
    b64 = {name: base64.b64encode(path.read_bytes()).decode() for name, path in
           (("cert", kube_tls.client_cert_path), ("key", kube_tls.client_key_path))}
    env = {
        "api-key-options": {"K8S_AUTH_HOST": kube_api.url, "K8S_AUTH_API_KEY": kube_api.token,
                            "K8S_AUTH_CA_CERT": kube_api.ca_path},
        "kubeconfig-inline-client-key": {"K8S_AUTH_KUBECONFIG": kubeconfig_with(
            kube_api, tmp_path / "kubeconfig", {"client-certificate-data": b64["cert"], "client-key-data": b64["key"]})},
        "client-key-file": {"K8S_AUTH_HOST": kube_api.url, "K8S_AUTH_CLIENT_CERT": kube_tls.client_cert_path,
                            "K8S_AUTH_CLIENT_KEY": kube_tls.client_key_path, "K8S_AUTH_CA_CERT": kube_api.ca_path},
        "rejected-token": {"K8S_AUTH_HOST": kube_api.url, "K8S_AUTH_API_KEY": WRONG_TOKEN,
                           "K8S_AUTH_CA_CERT": kube_api.ca_path},
    }[credentials]
    run = run_crosscheck(tmp_path, DEMO_OK_HOSTS, env, extra_args=["-vvv"])

    verdicts = {verdict["status"] for verdict in run.verdicts.values()}
    if credentials == "rejected-token":
        assert verdicts == {"UNKNOWN"} and "HTTP 401 Unauthorized" in run.output
    else:
        assert verdicts == {"OK"}, run.output
        assert kube_api.list_calls("pods") and kube_api.list_calls("events")  # the whole cluster view was read
    assert "<redacted>" not in run.output or credentials == "rejected-token"
    assert_nowhere(run, [kube_api.token, WRONG_TOKEN, client_key, b64["key"]])


def test_kubeconfig_insecure_skip_tls_verify_alone_does_not_skip_verification(kube_api, tmp_path):
    load_demo_cluster(kube_api)
    other_ca = make_tls_material(tmp_path / "other-ca", name="other").ca_path
    kubeconfig = kubeconfig_with(kube_api, tmp_path / "kubeconfig", {"token": kube_api.token},
                                 {"insecure-skip-tls-verify": True, "certificate-authority": str(other_ca)})
    kubeconfig_text = json.loads(kubeconfig.read_text())
    del kubeconfig_text["clusters"][0]["cluster"]["certificate-authority"]
    kubeconfig.write_text(json.dumps(kubeconfig_text))

    run = run_crosscheck(tmp_path, DEMO_OK_HOSTS, {"K8S_AUTH_KUBECONFIG": kubeconfig})
    assert run.returncode == 2
    assert {verdict["status"] for verdict in run.verdicts.values()} == {"UNKNOWN"}
    for verdict in run.verdicts.values():
        assert verdict["reason"].endswith(f"TLS verification of the server certificate failed (self-signed certificate "
                                          f"in certificate chain); set ca_cert to the cluster's CA bundle or fix the "
                                          f"kubeconfig's certificate-authority ({SKIP_TLS_HINT})"), verdict["reason"]
    assert INSECURE_WARNING not in run.output


def test_validate_certs_false_is_obeyed_with_a_warning(kube_api, tmp_path):
    load_demo_cluster(kube_api)
    other_ca = make_tls_material(tmp_path / "other-ca", name="other").ca_path
    env = {"K8S_AUTH_HOST": kube_api.url, "K8S_AUTH_API_KEY": kube_api.token, "K8S_AUTH_CA_CERT": other_ca,
           "K8S_AUTH_VALIDATE_CERTS": "false"}
    run = run_crosscheck(tmp_path, DEMO_OK_HOSTS, env)
    assert run.returncode == 0, run.output
    assert {verdict["status"] for verdict in run.verdicts.values()} == {"OK"}
    assert f"[WARNING]: {INSECURE_WARNING}" in run.output.replace("\n", " ").replace("  ", " ")

    verified = run_module("gpufleet.runtime_gate.runtimeclass_info",
                          {"host": kube_api.url, "api_key": kube_api.token, "ca_cert": kube_api.ca_path})
    assert verified.returncode == 0 and "warnings" not in verified.result, verified.output


def test_rc_crosscheck_warns_when_verification_is_off(kube_api, tmp_path):
    load_demo_cluster(kube_api)
    env = ansible_env(K8S_AUTH_VALIDATE_CERTS="false", K8S_AUTH_HOST=kube_api.url, K8S_AUTH_API_KEY=kube_api.token)
    completed = subprocess.run([str(REPO_ROOT / "bin" / "rc-crosscheck"), str(DEMO / "nodes" / "gpu-node-01" / "config-dump.toml")],
                               env=env, capture_output=True, text=True, timeout=120, check=False)
    # without --node-labels every class counts, the canary typo too: read from the cluster, judged as usual
    assert (completed.returncode, completed.stdout) == (1, "MISSING=nvdia\n"), completed.stderr
    assert completed.stderr.startswith(f"rc-crosscheck: warning: {INSECURE_WARNING}") and kube_api.token not in completed.stderr


PLAINTEXT_WARNING = "is http://: the bearer token is sent unencrypted"
KILLED_MID_SESSION = """
import os, signal, sys
sys.path.insert(0, sys.argv[2])
from kubernetes import client
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.session import ApiSession

with ApiSession({"kubeconfig": sys.argv[1]}) as session:
    items = session.list_all("RuntimeClasses", client.NodeV1Api(session.client).list_runtime_class, 500,
                             list_kind="RuntimeClassList")
    print(len(items), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # as a CI timeout or the OOM killer would: no finally, no atexit
"""


def test_an_inline_client_key_is_not_left_on_disk_when_the_run_is_killed(kube_api, kube_tls, tmp_path):
    """The kubernetes client writes client-key-data to TMPDIR and removes it at exit only; a killed run kept it."""
    load_demo_cluster(kube_api)
    key = kube_tls.client_key_path.read_bytes()
    kubeconfig = kubeconfig_with(kube_api, tmp_path / "kubeconfig", {
        "client-certificate-data": base64.b64encode(kube_tls.client_cert_path.read_bytes()).decode(),
        "client-key-data": base64.b64encode(key).decode()})
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    completed = subprocess.run([sys.executable, "-c", KILLED_MID_SESSION, str(kubeconfig), str(REPO_ROOT / ".collections")],
                               env=ansible_env(TMPDIR=tmpdir), capture_output=True, text=True, timeout=60, check=False)
    # Authenticated by the inline certificate and key alone (the kubeconfig holds no token), then killed.
    served = len(kube_api.stored("runtimeclasses"))
    assert (completed.returncode, completed.stdout.strip()) == (-signal.SIGKILL, str(served)), completed.stderr
    left = [path for path in tmpdir.rglob("*") if path.is_file() and key.strip().splitlines()[1] in path.read_bytes()]
    assert left == [], f"the client key was left on disk: {left}"


def test_a_bearer_token_sent_over_plain_http_is_warned_about(kube_tls, tmp_path):
    with KubeStandIn(kube_tls, tmp_path, plain_http=True) as plain:
        load_demo_cluster(plain)
        run = run_module("gpufleet.runtime_gate.runtimeclass_info", {"host": plain.url, "api_key": plain.token})
        assert run.returncode == 0, run.output
        assert f"[WARNING]: the API server address {plain.url} {PLAINTEXT_WARNING}" in run.output, run.output
        assert plain.token not in run.output
        completed = subprocess.run(
            [str(REPO_ROOT / "bin" / "rc-crosscheck"), str(DEMO / "nodes" / "gpu-node-01" / "config-dump.toml")],
            env=ansible_env(K8S_AUTH_HOST=plain.url, K8S_AUTH_API_KEY=plain.token), capture_output=True, text=True,
            timeout=120, check=False)
        assert PLAINTEXT_WARNING in completed.stderr and plain.token not in completed.stderr, completed.stderr


def test_the_proxy_password_never_appears_in_vvv_output_or_reports(kube_api, tmp_path):
    load_demo_cluster(kube_api)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    proxy_password = "proxy-pass-5b7e2c9d"
    env = {"K8S_AUTH_HOST": kube_api.url, "K8S_AUTH_API_KEY": kube_api.token, "K8S_AUTH_CA_CERT": kube_api.ca_path,
           "K8S_AUTH_PROXY": f"http://proxy-user:{proxy_password}@127.0.0.1:{port}"}
    run = run_crosscheck(tmp_path, DEMO_OK_HOSTS, env, extra_args=["-vvv"])
    assert {verdict["status"] for verdict in run.verdicts.values()} == {"UNKNOWN"}, run.output
    assert "the proxy refused or failed the connection" in run.output
    assert_nowhere(run, [proxy_password, kube_api.token])
