"""kubernetes.core's other connection options (issue 25 item 5): a module_defaults block shared with kubernetes.core
carries no_proxy, proxy_headers, persist_config, impersonate_user/impersonate_groups and a kubeconfig given as a dict.
Each is taken with kubernetes.core's meaning (kubernetes.core's plugins/doc_fragments/k8s_auth_options.py) or refused
naming the option and what to do instead; none is ignored. The real modules and client: tests/integration/kube."""
import pytest

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.auth import (
    AUTH_ARG_SPEC,
    REFUSED,
    insecure_warning,
    resolve_auth_options,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.client import build_api_client
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.errors import KubeAccessError

SERVER = {"host": "https://10.0.0.1:6443", "api_key": "secret-token"}


def test_no_proxy_reaches_the_client_configuration():
    client = build_api_client({**SERVER, "proxy": "http://proxy:3128", "no_proxy": "10.0.0.0/8,.cluster.local"})
    assert client.configuration.proxy == "http://proxy:3128"
    assert client.configuration.no_proxy == "10.0.0.0/8,.cluster.local"
    from_environment = resolve_auth_options(SERVER, environ={"K8S_AUTH_NO_PROXY": "localhost"})
    assert from_environment["no_proxy"] == "localhost"


@pytest.mark.parametrize("value", [None, False, "false", "no"])
def test_persist_config_false_is_what_the_collection_does(value):
    assert resolve_auth_options({**SERVER, "persist_config": value})["persist_config"] in (None, False)
    build_api_client({**SERVER, "persist_config": value})


@pytest.mark.parametrize(("options", "environ", "named"), [
    ({"persist_config": True}, {}, "persist_config is set"),
    ({}, {"K8S_AUTH_PERSIST_CONFIG": "true"}, "persist_config is set"),
    ({"proxy_headers": {"proxy_basic_auth": "user:pw"}}, {}, "proxy_headers is set"),
    ({"impersonate_user": "system:serviceaccount:ops:admin"}, {}, "impersonate_user is set"),
    ({}, {"K8S_AUTH_IMPERSONATE_USER": "alice"}, "impersonate_user is set"),
    ({"impersonate_groups": ["system:masters"]}, {}, "impersonate_groups is set"),
    ({}, {"K8S_AUTH_IMPERSONATE_GROUPS": "ops,admins"}, "impersonate_groups is set"),
    ({"kubeconfig": {"apiVersion": "v1", "clusters": []}}, {}, "a kubeconfig given as a dict"),
])
def test_refused_options_are_named_with_what_to_do_instead(options, environ, named):
    with pytest.raises(KubeAccessError) as raised:
        resolve_auth_options({**SERVER, **options}, environ=environ)
    message = str(raised.value)
    option = "kubeconfig" if "kubeconfig" in named else named.split()[0]
    assert message == f"{named}, which kubernetes.core takes but gpufleet.runtime_gate does not: {REFUSED[option]}"
    assert "secret-token" not in message and "user:pw" not in message
    # the client is never built with it
    with pytest.raises(KubeAccessError):
        build_api_client({**SERVER, **options}) if not environ else resolve_auth_options(options, environ=environ)
    # the validate_certs warning, asked before the client is built, does not raise
    assert insecure_warning({**SERVER, **options}) is None


@pytest.mark.parametrize("options", [{"impersonate_groups": []}, {"proxy_headers": {}}, {"impersonate_user": ""}])
def test_empty_values_are_no_refusal(options):
    build_api_client({**SERVER, **options})


def test_every_kubernetes_core_option_of_the_issue_is_in_the_argument_spec():
    assert {"no_proxy", "proxy_headers", "persist_config", "impersonate_user", "impersonate_groups"} <= set(AUTH_ARG_SPEC)
    assert AUTH_ARG_SPEC["kubeconfig"]["type"] == "raw"  # a dict reaches the refusal instead of becoming a path string
