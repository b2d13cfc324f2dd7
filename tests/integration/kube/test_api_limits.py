"""Bounded runs: a server that never finishes an answer or a list ends the read with one message naming the limit.

The stand-in dribbles an answer one byte per read (well inside request_timeout, which applies per read), or
hands out continue tokens that never settle. Each misbehaviour stops by itself after a few seconds, so before
the limits existed these tests failed late instead of hanging. No test asserts a wall time: a dribbled answer must end
in the deadline's message with the stand-in still dribbling, and with no request thread left behind (the socket it
read from is shut at the deadline, headers or body alike: issue 22 item 10).
"""
import threading

import pytest
from kube_runs import DEMO_OK_HOSTS, assert_one_clear_failure, load_demo_cluster, run_crosscheck, run_module

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.errors import KubeAccessError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.lists import list_cluster_objects
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.session import REQUEST_THREAD_NAME
from support.kube_fixtures import node, runtimeclass

RUNTIMECLASSES = "RuntimeClasses (node.k8s.io/v1)"


@pytest.fixture
def cluster(kube_api):
    kube_api.set_objects(runtimeclasses=[runtimeclass("nvidia", "nvidia"), runtimeclass("runc", "runc")],
                         nodes=[node("gpu-1", runtime_handlers=["", "nvidia", "runc"])])
    return kube_api


def read_cluster(cluster, **limits):
    """list_cluster_objects in-process; returns the KubeAccessError raised."""
    with pytest.raises(KubeAccessError) as raised:
        list_cluster_objects({"kubeconfig": str(cluster.kubeconfig_path)}, include_nodes=True, **limits)
    return raised.value


def request_threads():
    return [thread.name for thread in threading.enumerate() if thread.name == REQUEST_THREAD_NAME and thread.is_alive()]


@pytest.mark.parametrize("phase", ["headers", "body"])
def test_an_answer_dribbled_byte_by_byte_ends_at_the_request_deadline(cluster, phase):
    # The stand-in would dribble for 60 s: the read ended at the deadline, not when the server stopped.
    cluster.drip("runtimeclasses", phase=phase, interval=0.1, stop_after=60)
    error = read_cluster(cluster, request_deadline=1)
    assert str(error) == (f"listing {RUNTIMECLASSES} from {cluster.url} failed: the whole answer did not arrive within "
                          "1 s (request_deadline; request_timeout bounds each read only)")
    assert error.server == cluster.url
    assert request_threads() == []


def test_a_dribbled_node_list_ends_at_the_request_deadline_too(cluster):
    cluster.drip("nodes", phase="body", interval=0.1, stop_after=60)
    error = read_cluster(cluster, request_deadline=1)
    assert str(error).startswith(f"listing Nodes (v1) from {cluster.url} failed: the whole answer did not arrive "
                                 "within 1 s (request_deadline")
    assert request_threads() == []


def test_continue_tokens_that_alternate_are_caught_at_the_first_repeat(cluster):
    cluster.endless_continue("runtimeclasses", tokens="alternating", pages=40)
    error = read_cluster(cluster)
    assert str(error) == (f"listing {RUNTIMECLASSES} from {cluster.url} failed: page 3 carries a continue token the "
                          "server already sent on page 1: the list would never end")
    assert len(cluster.list_calls("runtimeclasses")) == 3


def test_continue_tokens_that_are_always_new_end_at_the_page_budget(cluster):
    cluster.endless_continue("runtimeclasses", tokens="fresh", pages=40)
    error = read_cluster(cluster, list_page_budget=5)
    assert str(error) == (f"listing {RUNTIMECLASSES} from {cluster.url} failed: the list did not end within 5 pages "
                          "(list_page_budget); the server keeps sending continue tokens: raise page_size or "
                          "list_page_budget if the cluster really is that large")
    assert len(cluster.list_calls("runtimeclasses")) == 5


def test_a_slow_list_ends_at_the_time_budget(cluster):
    cluster.endless_continue("runtimeclasses", tokens="fresh", pages=15)
    cluster.delay_seconds = 0.4
    error = read_cluster(cluster, list_time_budget=2)
    assert str(error) == (f"listing {RUNTIMECLASSES} from {cluster.url} failed: the list was not read whole within "
                          "2 s (list_time_budget)")
    assert len(cluster.list_calls("runtimeclasses")) < 15


def test_module_options_set_the_limits(cluster):
    # Headers dribbled: the module's request thread is cut at the deadline, so the module process ends cleanly.
    cluster.drip("runtimeclasses", phase="headers", interval=0.1, stop_after=60)
    run = run_module("gpufleet.runtime_gate.runtimeclass_info",
                     {"kubeconfig": cluster.kubeconfig_path, "request_deadline": 2})
    assert_one_clear_failure(run, f"listing {RUNTIMECLASSES} from {cluster.url} failed: the whole answer did not arrive "
                                  "within 2 s (request_deadline")
    assert run.result["server"] == cluster.url
    assert "Fatal Python error" not in run.output and "rc" not in run.result, run.output


def test_crosscheck_judges_no_host_ok_past_a_budget_set_in_the_environment(kube_api, tmp_path):
    load_demo_cluster(kube_api)
    kube_api.endless_continue("nodes", tokens="fresh", pages=40)
    run = run_crosscheck(tmp_path, DEMO_OK_HOSTS, {"K8S_AUTH_KUBECONFIG": kube_api.kubeconfig_path,
                                                   "RUNTIME_GATE_LIST_PAGE_BUDGET": "4"})
    assert run.returncode == 2, run.output
    assert "Traceback" not in run.output
    assert len(kube_api.list_calls("nodes")) == 4
    for host, verdict in run.verdicts.items():
        assert verdict["status"] == "UNKNOWN", (host, verdict)
        assert verdict["reason"].endswith(f"listing Nodes (v1) from {kube_api.url} failed: the list did not end within "
                                          "4 pages (list_page_budget); the server keeps sending continue tokens: raise "
                                          "page_size or list_page_budget if the cluster really is that large")
    assert sorted(run.verdicts) == DEMO_OK_HOSTS
