"""Read RuntimeClasses (and Nodes) from a Kubernetes API server, with kubernetes.core's auth options.

Controller side. ``list_cluster_objects(options)`` takes a plain dict of the ``AUTH_ARG_SPEC``
options, so modules and the CLI ``bin/rc-crosscheck`` share it. Every failure is a
``KubeAccessError`` whose message says what was asked, of which server, and what came back; no
token, client key or kubeconfig content ever appears in it.
"""

import email.utils
import json
import math
import os
import re
import time
import traceback
import warnings

from ansible.module_utils.basic import env_fallback
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._cluster_objects import (
    SANDBOX_FAILURE_REASON,
    normalise_cluster_objects,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._errors import RuntimeGateError

try:
    import urllib3
    import yaml
    from kubernetes import client as kube_client
    from kubernetes import config as kube_config
    from kubernetes.client.exceptions import ApiException
    from kubernetes.config.config_exception import ConfigException
except ImportError:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()
else:
    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None


# Each option falls back to K8S_AUTH_<OPTION>, and like kubernetes.core also to the client-side
# spelling (K8S_AUTH_VERIFY_SSL, ...); the option's own name is looked up first.
AUTH_ARG_SPEC = {
    "kubeconfig": {"type": "path", "fallback": (env_fallback, ["K8S_AUTH_KUBECONFIG"])},
    "context": {"type": "str", "fallback": (env_fallback, ["K8S_AUTH_CONTEXT"])},
    "host": {"type": "str", "fallback": (env_fallback, ["K8S_AUTH_HOST"])},
    "api_key": {"type": "str", "no_log": True, "fallback": (env_fallback, ["K8S_AUTH_API_KEY"])},
    # Verified unless explicitly false, whatever the kubeconfig says (docs/security.md); false warns.
    "validate_certs": {"type": "bool", "default": True, "aliases": ["verify_ssl"],
                       "fallback": (env_fallback, ["K8S_AUTH_VALIDATE_CERTS", "K8S_AUTH_VERIFY_SSL"])},
    "ca_cert": {"type": "path", "aliases": ["ssl_ca_cert"],
                "fallback": (env_fallback, ["K8S_AUTH_CA_CERT", "K8S_AUTH_SSL_CA_CERT"])},
    "client_cert": {"type": "path", "aliases": ["cert_file"],
                    "fallback": (env_fallback, ["K8S_AUTH_CLIENT_CERT", "K8S_AUTH_CERT_FILE"])},
    "client_key": {"type": "path", "aliases": ["key_file"],
                   "fallback": (env_fallback, ["K8S_AUTH_CLIENT_KEY", "K8S_AUTH_KEY_FILE"])},
    "proxy": {"type": "str", "fallback": (env_fallback, ["K8S_AUTH_PROXY"])},
}

DEFAULT_PAGE_SIZE = 500
DEFAULT_REQUEST_TIMEOUT = 30
# 429 (API Priority and Fairness): wait as Retry-After asks, a few times, a few seconds each; a run
# scheduled nightly is better failed with a clear message than stalled behind an overloaded server.
THROTTLE_RETRIES = 3
MAX_RETRY_AFTER = 10
_ALIASES = {"verify_ssl": "validate_certs", "ssl_ca_cert": "ca_cert", "cert_file": "client_cert", "key_file": "client_key"}
_HTTP_HINTS = {
    401: "the credentials were not accepted; check the token, client certificate or kubeconfig user",
    403: "the credentials lack this permission; docs/rbac.yaml lists what the collection needs",
    404: "the server does not serve this API: host must be the API server's root URL, and node.k8s.io/v1 "
         "RuntimeClasses need Kubernetes 1.20 or later",
    410: "the list changed faster than it could be read page by page, also after one fresh start; retry later or "
         "raise page_size",
}


class KubeAccessError(RuntimeGateError):
    """The cluster could not be read; ``server`` and ``http_status`` are None when unknown."""

    def __init__(self, message, server=None, http_status=None):
        super().__init__(message)
        self.server = server
        self.http_status = http_status

    def result_fields(self):
        """``msg`` plus ``server``/``http_status`` when known: what a module's ``fail_json`` returns."""
        known = {"server": self.server, "http_status": self.http_status}
        return {"msg": str(self), **{key: value for key, value in known.items() if value}}


class KubernetesLibraryMissing(KubeAccessError):
    """The ``kubernetes`` Python library is not importable (modules use ``missing_required_lib``)."""


def resolve_auth_options(options, environ=None):
    """Canonical option names, with ``K8S_AUTH_*`` filling what ``options`` leaves unset or None.

    For callers outside Ansible (the CLI); under Ansible the argument spec already did this,
    and applying it twice changes nothing.
    """
    environ = os.environ if environ is None else environ
    resolved = {name: None for name in AUTH_ARG_SPEC}
    for key, value in (options or {}).items():
        name = _ALIASES.get(key, key)
        if name in resolved and value is not None:
            resolved[name] = value
    for name, spec in AUTH_ARG_SPEC.items():
        if resolved[name] is None:
            resolved[name] = next((environ[env] for env in spec["fallback"][1] if environ.get(env)), None)
    if resolved["validate_certs"] is not None:
        resolved["validate_certs"] = boolean(resolved["validate_certs"], strict=False)
    for name in ("kubeconfig", "ca_cert", "client_cert", "client_key"):
        if resolved[name]:
            resolved[name] = os.path.expanduser(os.path.expandvars(resolved[name]))
    return resolved


def insecure_warning(options):
    """The warning to show when ``validate_certs`` is off, else None."""
    if resolve_auth_options(options)["validate_certs"] is False:
        return ("validate_certs is false: the API server's certificate is not verified, so anyone on the network path "
                "can read the credentials sent and forge the cluster's answers; set ca_cert instead")
    return None


def build_api_client(options):
    """An isolated ``kubernetes.client.ApiClient`` following kubernetes.core's resolution order.

    host+api_key or host+client_cert+client_key: no file is read. Else kubeconfig or context
    given: that kubeconfig (default location if only a context). Else in-cluster service account,
    then the default kubeconfig. Explicit options then override what was loaded.

    Certificates are verified unless ``validate_certs`` is false: a kubeconfig's
    ``insecure-skip-tls-verify`` alone does not turn verification off (see docs/security.md).
    """
    _require_library()
    auth = resolve_auth_options(options)
    configuration = kube_client.Configuration()
    secrets = [auth["api_key"]] if auth["api_key"] else []
    credentials_given = auth["host"] and (auth["api_key"] or (auth["client_cert"] and auth["client_key"]))
    if not credentials_given and (auth["kubeconfig"] or auth["context"]):
        _load_kubeconfig(configuration, auth["kubeconfig"], auth["context"], secrets)
    elif not credentials_given:
        try:
            kube_config.load_incluster_config(client_configuration=configuration)
        except ConfigException:
            _load_kubeconfig(configuration, None, None, secrets)
    kubeconfig_skips_tls = configuration.verify_ssl is False
    if auth["host"]:
        configuration.host = auth["host"].rstrip("/")
    if auth["api_key"]:
        # A kubeconfig token lives under 'BearerToken', which the client prefers; drop it and its refresh hook.
        configuration.api_key = {"authorization": f"Bearer {auth['api_key']}"}
        configuration.refresh_api_key_hook = None
    for option, attribute in (("ca_cert", "ssl_ca_cert"), ("client_cert", "cert_file"), ("client_key", "key_file"),
                              ("proxy", "proxy")):
        if auth[option] is not None:
            setattr(configuration, attribute, auth[option])
    configuration.verify_ssl = auth["validate_certs"] is not False
    for path_option in ("ca_cert", "client_cert", "client_key"):
        if auth[path_option] and not os.path.isfile(auth[path_option]):
            raise KubeAccessError(f"{path_option} '{auth[path_option]}' does not exist or is not a file")
    if configuration.host in (None, "", "http://localhost"):
        raise KubeAccessError("no API server address: set host, or a kubeconfig whose cluster has a server")
    if not configuration.host.startswith(("https://", "http://")):
        raise KubeAccessError(f"API server address '{configuration.host}' must start with https:// (or http://)")
    # Fail fast with the real cause instead of urllib3 retry noise; 429 is retried by ApiSession.
    configuration.retries = False
    api_client = kube_client.ApiClient(configuration)
    api_client.kubeconfig_skips_tls = kubeconfig_skips_tls and configuration.verify_ssl
    return api_client


def list_cluster_objects(options, include_nodes=False, page_size=DEFAULT_PAGE_SIZE,
                         request_timeout=DEFAULT_REQUEST_TIMEOUT, include_pods=False):
    """List node.k8s.io/v1 RuntimeClasses (and core/v1 Nodes, Pods) with ``limit``/``continue`` pagination.

    Returns ``{"runtimeclasses": [...], "nodes": [...], "pods": [...], "server": "https://host:port",
    "api_requests": <HTTP requests sent>}``; items normalised by ``_cluster_objects``
    (``nodes``/``pods`` are ``[]`` unless asked for). Pods come with their ``FailedCreatePodSandBox``
    Events, listed cluster-wide with a field selector: a fixed number of lists, whatever the fleet size.
    Raises ``KubeAccessError``.
    """
    if not isinstance(page_size, int) or isinstance(page_size, bool) or page_size < 1:
        raise KubeAccessError(f"page_size must be a whole number of at least 1, not {page_size!r}")
    with ApiSession(options, request_timeout) as session:
        core = kube_client.CoreV1Api(session.client)
        runtimeclass_items = session.list_all(
            "RuntimeClasses (node.k8s.io/v1)", kube_client.NodeV1Api(session.client).list_runtime_class, page_size)
        node_items = session.list_all("Nodes (v1)", core.list_node, page_size) if include_nodes else []
        pod_items, event_items = [], []
        if include_pods:
            pod_items = session.list_all("Pods (v1, all namespaces)", core.list_pod_for_all_namespaces, page_size)
            event_items = session.list_all(
                f"Events (v1, all namespaces, reason={SANDBOX_FAILURE_REASON})", core.list_event_for_all_namespaces,
                page_size, field_selector=f"reason={SANDBOX_FAILURE_REASON}")
    cluster_objects = normalise_cluster_objects(runtimeclass_items, node_items, f"the API server {session.server}",
                                                pod_objs=pod_items, event_objs=event_items)
    return dict(cluster_objects, server=session.server, api_requests=session.api_requests)


class ApiSession:
    """One API client for a few calls: every request counted, throttling retried, every failure a ``KubeAccessError``.

    Use as a context manager; ``request(asked, call, **kwargs)`` returns the answer's JSON object.
    """

    def __init__(self, options, request_timeout=DEFAULT_REQUEST_TIMEOUT, sleep=time.sleep):
        if not isinstance(request_timeout, (int, float)) or isinstance(request_timeout, bool) or request_timeout <= 0:
            raise KubeAccessError(f"request_timeout must be a positive number of seconds, not {request_timeout!r}")
        self.client = build_api_client(options)
        self.server = self.client.configuration.host
        self.request_timeout = request_timeout
        self.secrets = [value for value in self.client.configuration.api_key.values() if value]
        self.api_requests = 0
        self._sleep = sleep
        self._warnings = None

    def __enter__(self):
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        # validate_certs=false was asked for explicitly and warned about once; urllib3 would warn on every request.
        warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
        return self

    def __exit__(self, *exc_info):
        self._warnings.__exit__(*exc_info)
        self.client.close()

    def list_all(self, what, list_call, page_size, **selectors):
        """Every item of a list, page by page; an expired continue token (410) restarts the list once."""
        asked = f"listing {what} from {self.server}"
        items = []
        continue_token = None
        restarted = False
        while True:
            try:
                page = self.request(asked, list_call, limit=page_size, _continue=continue_token, **selectors)
            except KubeAccessError as err:
                # 410: the continue token expired mid-list; start over once for a consistent list.
                if err.http_status == 410 and continue_token and not restarted:
                    restarted, items, continue_token = True, [], None
                    continue
                raise
            page_items = page.get("items") or []
            if not isinstance(page_items, list):
                raise KubeAccessError(f"{asked} failed: the answer's 'items' is not a list", self.server)
            items.extend(page_items)
            next_token = (page.get("metadata") or {}).get("continue")
            if not next_token:
                return items
            if next_token == continue_token:
                raise KubeAccessError(f"{asked} failed: the server repeated the same continue token", self.server)
            continue_token = next_token

    def request(self, asked, call, *args, **kwargs):
        """``call(*args, **kwargs)`` as raw JSON; 429 is retried as Retry-After asks, at most THROTTLE_RETRIES times."""
        waited = 0
        for attempt in range(THROTTLE_RETRIES + 1):
            try:
                return self._request_once(asked, call, args, kwargs)
            except _Throttled as throttled:
                if throttled.retry_after > MAX_RETRY_AFTER:
                    raise self._error(asked, 429, throttled.reason, throttled.body,
                                      f"the server asked to retry after {throttled.retry_after} s, longer than the "
                                      f"{MAX_RETRY_AFTER} s this check waits; retry later") from None
                if attempt == THROTTLE_RETRIES:
                    raise self._error(asked, 429, throttled.reason, throttled.body,
                                      f"still throttled after {THROTTLE_RETRIES} retries over {waited} s, waiting as "
                                      "Retry-After asked; retry later, or give this client a larger API Priority and "
                                      "Fairness share") from None
                self._sleep(throttled.retry_after)
                waited += throttled.retry_after
        raise AssertionError("unreachable")

    def _request_once(self, asked, call, args, kwargs):
        self.api_requests += 1
        try:
            response = call(*args, _preload_content=False, _request_timeout=self.request_timeout, **kwargs)
            body = response.data
        except ApiException as err:
            if err.status == 429:
                raise _Throttled(_retry_after_seconds(err.headers), err.reason, err.body) from None
            raise self._error(asked, err.status, err.reason, err.body) from None
        except urllib3.exceptions.HTTPError as err:
            described = _describe_transport_error(err, self.request_timeout, self.server)
            raise KubeAccessError(self._redact(f"{asked} failed: {described}{self._tls_hint(err)}"), self.server) from None
        except (ValueError, TypeError, OSError) as err:
            raise KubeAccessError(self._redact(f"{asked} failed: {type(err).__name__}: {err}".splitlines()[0]),
                                  self.server) from None
        try:
            answer = json.loads(body)
        except ValueError:
            raise KubeAccessError(f"{asked} failed: the answer is not JSON (is this a Kubernetes API server?)",
                                  self.server) from None
        if not isinstance(answer, dict):
            raise KubeAccessError(f"{asked} failed: the answer is not a Kubernetes object or list", self.server)
        return answer

    def _error(self, asked, status, reason, body, explanation=None):
        if not status:
            # rest.py turns TLS failures into ApiException(status=0, reason="SSLError\n<detail>").
            detail = (reason or "").split("\n", 1)[-1]
            hint = " (the kubeconfig's insecure-skip-tls-verify is ignored unless validate_certs is false)" \
                if self.client.kubeconfig_skips_tls else ""
            return KubeAccessError(self._redact(f"{asked} failed: {_describe_tls_error(detail)}{hint}"), self.server)
        text = f"{asked} failed: HTTP {status} {reason or ''}".rstrip()
        server_message = _status_message(body)
        if server_message:
            text += f": {server_message}"
        if explanation:
            text += f" ({explanation})"
        elif status in _HTTP_HINTS:
            text += f" ({_HTTP_HINTS[status]})"
        elif status >= 500:
            text += " (a server-side failure; retry later or check the API server's health)"
        return KubeAccessError(self._redact(text), self.server, http_status=status)

    def _tls_hint(self, err):
        if self.client.kubeconfig_skips_tls and isinstance(err, urllib3.exceptions.SSLError):
            return " (the kubeconfig's insecure-skip-tls-verify is ignored unless validate_certs is false)"
        return ""

    def _redact(self, text):
        for secret in self.secrets:
            bare = secret.split(" ", 1)[-1]
            for value in (secret, bare):
                if len(value) >= 4:
                    text = text.replace(value, "<redacted>")
        return text


class _Throttled(Exception):
    def __init__(self, retry_after, reason, body):
        super().__init__(reason)
        self.retry_after = retry_after
        self.reason = reason
        self.body = body


def _retry_after_seconds(headers):
    """Retry-After in whole seconds (delta-seconds or an HTTP date); 1 when absent or unreadable."""
    value = str((headers or {}).get("Retry-After") or "").strip()
    if value.isdigit():
        return int(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return 1
    return max(0, math.ceil(when.timestamp() - time.time()))


def _status_message(body):
    if not body:
        return None
    try:
        status = json.loads(body)
    except ValueError:
        first_line = str(body).strip().splitlines()[0] if str(body).strip() else ""
        return first_line[:200] or None
    if isinstance(status, dict) and status.get("message"):
        return str(status["message"])
    return None


def _describe_transport_error(err, request_timeout, server):
    if isinstance(err, urllib3.exceptions.SSLError):
        return _describe_tls_error(str(err))
    if isinstance(err, urllib3.exceptions.NameResolutionError):
        return "cannot resolve the server's host name"
    if isinstance(err, urllib3.exceptions.NewConnectionError):
        cause = "connection refused" if "refused" in str(err).lower() else "cannot connect"
        return f"{cause}; check the server address and that the API server is reachable"
    if isinstance(err, urllib3.exceptions.ProxyError):
        return "the proxy refused or failed the connection"
    if isinstance(err, (urllib3.exceptions.TimeoutError, TimeoutError)):
        return f"no answer within {request_timeout} s (request_timeout)"
    if isinstance(err, urllib3.exceptions.ProtocolError):
        hint = " (an http:// address for an HTTPS server does this)" if server.startswith("http://") else ""
        return f"the connection broke off mid-answer{hint}"
    return f"{type(err).__name__}: {err}".splitlines()[0]


def _describe_tls_error(detail):
    if "CERTIFICATE_VERIFY_FAILED" in detail or "certificate verify failed" in detail:
        found = re.search(r"certificate verify failed: ([^()]+)", detail)
        reason = found.group(1).strip() if found else None
        return (f"TLS verification of the server certificate failed ({reason or 'untrusted certificate'}); "
                "set ca_cert to the cluster's CA bundle or fix the kubeconfig's certificate-authority")
    if "match" in detail and "hostname" in detail.lower():
        return "TLS failed: the server certificate does not name this host (check host / tls-server-name)"
    return "TLS handshake failed; check ca_cert, client_cert/client_key and the server address"


def _load_kubeconfig(configuration, path, context, secrets):
    shown = f"kubeconfig '{path}'" if path else "the default kubeconfig ($KUBECONFIG or ~/.kube/config)"
    if context:
        shown += f" (context '{context}')"
    if path and not os.path.isfile(path):
        raise KubeAccessError(f"cannot load {shown}: the file does not exist")
    default_paths = kube_config.KUBE_CONFIG_DEFAULT_LOCATION.split(os.pathsep)
    if not path and not context and not any(os.path.isfile(os.path.expanduser(p)) for p in default_paths):
        raise KubeAccessError(
            "no cluster credentials: not running in a pod, and no kubeconfig at $KUBECONFIG or ~/.kube/config; "
            "set kubeconfig (K8S_AUTH_KUBECONFIG), or host with api_key or client_cert/client_key")
    try:
        kube_config.load_kube_config(config_file=path, context=context, client_configuration=configuration,
                                     persist_config=False)
    except Exception as err:  # pylint: disable=broad-except
        raise KubeAccessError(f"cannot load {shown}: {_describe_kubeconfig_error(err, secrets)}") from None


def _describe_kubeconfig_error(err, secrets):
    if isinstance(err, yaml.YAMLError):
        # PyYAML's own text quotes the offending line, which may hold a token: keep only the position.
        mark = getattr(err, "problem_mark", None)
        return f"not valid YAML at line {mark.line + 1}" if mark else "not valid YAML"
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    for secret in secrets:
        text = text.replace(secret, "<redacted>")
    return text


def _require_library():
    if not HAS_KUBERNETES:
        raise KubernetesLibraryMissing(
            "the Python library 'kubernetes' is required to read the cluster (pip install 'kubernetes>=37.0.2'); "
            "a manifest file (src) does not need it")
