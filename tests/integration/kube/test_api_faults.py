"""API faults through the real crosscheck.yml (or the module where the playbook has no knob): the exact message a
user reads, and no host judged OK from a cluster that could not be read.

The stand-in serves the demo cluster; the two demo hosts below are OK when the cluster answers, so a
fault that leaked into "OK" would show. Each host's verdict reason is the module's message after the
verdict's own prefix; the module's message also appears verbatim (JSON-quoted) in ansible-playbook's output.
"""
import json
import math

import pytest
import yaml
from kube_runs import DEMO, DEMO_OK_HOSTS, assert_one_clear_failure, load_demo_cluster, run_crosscheck, run_module

from support.kube_standin import make_tls_material

RUNTIMECLASSES = "RuntimeClasses (node.k8s.io/v1)"


def listing(what, url):
    return f"listing {what} from {url} failed: "


def crosscheck(kube_api, tmp_path, context="standin", kubeconfig=None):
    env = {"K8S_AUTH_KUBECONFIG": kubeconfig or kube_api.kubeconfig_path, "K8S_AUTH_CONTEXT": context}
    return run_crosscheck(tmp_path, DEMO_OK_HOSTS, env)


def assert_every_host_unknown_with(run, message):
    assert run.returncode == 2, run.output
    assert json.dumps(message) in run.output, run.output
    assert "Traceback" not in run.output
    assert sorted(run.verdicts) == DEMO_OK_HOSTS
    for host, verdict in run.verdicts.items():
        assert verdict["status"] == "UNKNOWN", (host, verdict)
        assert verdict["reason"].endswith(": " + message), verdict["reason"]


def assert_judged_as_usual(run):
    assert run.returncode == 0, run.output
    assert {host: verdict["status"] for host, verdict in run.verdicts.items()} == dict.fromkeys(DEMO_OK_HOSTS, "OK")


def runtimeclass_pages(kube_api):
    count = sum(item["kind"] == "RuntimeClass" for item in yaml.safe_load((DEMO / "cluster.yaml").read_text())["items"])
    return math.ceil(count / kube_api.max_page)


@pytest.fixture
def demo_cluster(kube_api):
    load_demo_cluster(kube_api)
    assert runtimeclass_pages(kube_api) >= 2, "the demo cluster must need a continue token"
    return kube_api


def test_401_rejected_token(demo_cluster, tmp_path):
    run = crosscheck(demo_cluster, tmp_path, context="standin-bad-token")
    assert_every_host_unknown_with(run, listing(RUNTIMECLASSES, demo_cluster.url) + (
        "HTTP 401 Unauthorized: Unauthorized (the credentials were not accepted; check the token, client certificate "
        "or kubeconfig user)"))


def test_403_forbidden_nodes(demo_cluster, tmp_path):
    demo_cluster.fail("nodes", 403)
    run = crosscheck(demo_cluster, tmp_path)
    assert_every_host_unknown_with(run, listing("Nodes (v1)", demo_cluster.url) + (
        'HTTP 403 Forbidden: nodes is forbidden: User "system:serviceaccount:gpu-checks:runtime-gate" cannot list '
        'resource "nodes" in API group "" at the cluster scope (the credentials lack this permission; docs/rbac.yaml '
        "lists what the collection needs)"))


def test_404_api_not_served(demo_cluster, tmp_path):
    demo_cluster.fail("runtimeclasses", 404)
    run = crosscheck(demo_cluster, tmp_path)
    assert_every_host_unknown_with(run, listing(RUNTIMECLASSES, demo_cluster.url) + (
        "HTTP 404 Not Found: the server could not find the requested resource (the server does not serve this API: "
        "host must be the API server's root URL, and node.k8s.io/v1 RuntimeClasses need Kubernetes 1.20 or later)"))


def test_410_expired_continue_token_restarts_the_list_once(demo_cluster, tmp_path):
    demo_cluster.fail("runtimeclasses", 410, times=1, on_continue=True)
    run = crosscheck(demo_cluster, tmp_path)
    assert_judged_as_usual(run)
    calls = demo_cluster.list_calls("runtimeclasses")
    # first page, the expired continue, then the whole list again from the start
    assert len(calls) == 1 + 1 + runtimeclass_pages(demo_cluster)
    assert "continue" in calls[1].query and "continue" not in calls[2].query


def test_410_again_after_the_restart_fails(demo_cluster, tmp_path):
    demo_cluster.fail("runtimeclasses", 410, on_continue=True)
    run = crosscheck(demo_cluster, tmp_path)
    assert_every_host_unknown_with(run, listing(RUNTIMECLASSES, demo_cluster.url) + (
        "HTTP 410 Gone: The provided continue parameter is too old to display a consistent list result. (the list "
        "changed faster than it could be read page by page, also after one fresh start; retry later or raise page_size)"))
    assert len(demo_cluster.list_calls("runtimeclasses")) == 4  # page 1, expired, page 1 again, expired again


def test_429_is_retried_as_retry_after_asks(demo_cluster, tmp_path):
    demo_cluster.fail("runtimeclasses", 429, times=2, retry_after=1)
    run = crosscheck(demo_cluster, tmp_path)
    assert_judged_as_usual(run)
    assert len(demo_cluster.list_calls("runtimeclasses")) == 2 + runtimeclass_pages(demo_cluster)


@pytest.mark.parametrize("retry_after,explanation,requests", [
    (0, "still throttled after 3 retries over 0 s, waiting as Retry-After asked; retry later, or give this client a "
        "larger API Priority and Fairness share", 4),
    (120, "the server asked to retry after 120 s, longer than the 10 s this check waits; retry later", 1),
])
def test_429_gives_up_with_a_clear_message(demo_cluster, tmp_path, retry_after, explanation, requests):
    demo_cluster.fail("runtimeclasses", 429, retry_after=retry_after)
    run = crosscheck(demo_cluster, tmp_path)
    assert_every_host_unknown_with(run, listing(RUNTIMECLASSES, demo_cluster.url) + (
        f"HTTP 429 Too Many Requests: Too many requests, please try again later. ({explanation})"))
    assert len(demo_cluster.list_calls("runtimeclasses")) == requests


def test_500_on_the_pod_list(demo_cluster, tmp_path):
    demo_cluster.fail("pods", 500)
    run = crosscheck(demo_cluster, tmp_path)
    assert_every_host_unknown_with(run, listing("Pods (v1, all namespaces)", demo_cluster.url) + (
        "HTTP 500 Internal Server Error: Internal error occurred: etcdserver: request timed out (a server-side failure; "
        "retry later or check the API server's health)"))


def test_slow_answer_past_request_timeout(demo_cluster):
    # crosscheck.yml has no request_timeout variable (default 30 s); the module is where a user sets it.
    demo_cluster.delay_seconds = 3
    run = run_module("gpufleet.runtime_gate.runtimeclass_info",
                     {"kubeconfig": demo_cluster.kubeconfig_path, "request_timeout": 1, "nodes": True, "pods": True})
    assert_one_clear_failure(run)
    assert run.result["msg"] == listing(RUNTIMECLASSES, demo_cluster.url) + "no answer within 1 s (request_timeout)"
    assert "runtimeclasses" not in run.result and run.result["server"] == demo_cluster.url


def test_tls_server_certificate_from_another_ca(demo_cluster, tmp_path):
    other_ca = make_tls_material(tmp_path / "other-ca", name="other").ca_path
    kubeconfig = json.loads(demo_cluster.kubeconfig_path.read_text())
    kubeconfig["clusters"][0]["cluster"]["certificate-authority"] = str(other_ca)
    wrong_ca = tmp_path / "kubeconfig-wrong-ca"
    wrong_ca.write_text(json.dumps(kubeconfig))
    run = crosscheck(demo_cluster, tmp_path, kubeconfig=wrong_ca)
    assert_every_host_unknown_with(run, listing(RUNTIMECLASSES, demo_cluster.url) + (
        "TLS verification of the server certificate failed (self-signed certificate in certificate chain); set ca_cert to "
        "the cluster's CA bundle or fix the kubeconfig's certificate-authority"))
    assert not demo_cluster.list_calls("runtimeclasses")  # the handshake failed before any request
