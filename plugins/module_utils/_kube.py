"""Read RuntimeClasses (and Nodes) from a Kubernetes API server, with kubernetes.core's auth options.

Controller side. ``list_cluster_objects(options)`` takes a plain dict of the ``AUTH_ARG_SPEC``
options, so modules and the CLI ``bin/rc-crosscheck`` share it. Every failure is a
``KubeAccessError`` whose message says what was asked, of which server, and what came back; no
token, client key or kubeconfig content ever appears in it.

Every run is bounded (docs/security.md): each request has a deadline for its whole answer, each list a
page budget and a time budget (``LIMIT_ARG_SPEC``), and an answer counts only when it is a well-formed
list of the kind asked for.
"""

import email.utils
import json
import math
import os
import re
import threading
import time
import traceback
import warnings

from ansible.module_utils.basic import env_fallback
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._cluster_objects import (
    SANDBOX_FAILURE_REASON,
    normalise_cluster_objects,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._kube_credentials import (
    InlineCredentialFiles,
    plaintext_credentials_warning,
    proxy_secrets,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._errors import (
    RuntimeGateError,
    cut_text,
    shown_value,
)

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
    # A proxy URL can carry user:password (http://user:pw@proxy:3128): hidden like the token, also at -vvv.
    "proxy": {"type": "str", "no_log": True, "fallback": (env_fallback, ["K8S_AUTH_PROXY"])},
}

DEFAULT_PAGE_SIZE = 500
DEFAULT_REQUEST_TIMEOUT = 30
# request_timeout bounds each read of the socket, so a server that sends a byte now and then never times out.
# These bound the whole: one request's answer, and one list however many pages it has. The defaults are far
# above what a healthy cluster needs (a 500-object page arrives in well under a second).
DEFAULT_REQUEST_DEADLINE = 120
DEFAULT_LIST_PAGE_BUDGET = 1000
DEFAULT_LIST_TIME_BUDGET = 600
LIMIT_ARG_SPEC = {
    "request_deadline": {"type": "int", "default": DEFAULT_REQUEST_DEADLINE,
                         "fallback": (env_fallback, ["RUNTIME_GATE_REQUEST_DEADLINE"])},
    "list_page_budget": {"type": "int", "default": DEFAULT_LIST_PAGE_BUDGET,
                         "fallback": (env_fallback, ["RUNTIME_GATE_LIST_PAGE_BUDGET"])},
    "list_time_budget": {"type": "int", "default": DEFAULT_LIST_TIME_BUDGET,
                         "fallback": (env_fallback, ["RUNTIME_GATE_LIST_TIME_BUDGET"])},
}
# A server's Status message is shown, but a hostile or broken server must not make it megabytes long.
MAX_SERVER_MESSAGE_CHARS = 300
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
    secrets += proxy_secrets(auth["proxy"])
    credentials_given = auth["host"] and (auth["api_key"] or (auth["client_cert"] and auth["client_key"]))
    inline_files = InlineCredentialFiles()
    try:
        if not credentials_given and (auth["kubeconfig"] or auth["context"]):
            _load_kubeconfig(configuration, auth["kubeconfig"], auth["context"], secrets, inline_files.directory)
        elif not credentials_given:
            try:
                kube_config.load_incluster_config(client_configuration=configuration)
            except ConfigException:
                _load_kubeconfig(configuration, None, None, secrets, inline_files.directory)
        inline_files.keep_off_disk(configuration, getattr(kube_config.kube_config, "_temp_files", None))
    except BaseException:
        inline_files.close()
        raise
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
    api_client.inline_credential_files = inline_files
    sends_token = any(configuration.api_key.values()) or bool(configuration.refresh_api_key_hook)
    warning = plaintext_credentials_warning(configuration.host, sends_token)
    api_client.credential_warnings = [warning] if warning else []
    return api_client


def resolve_limits(limits=None, environ=None):
    """``{"request_deadline", "list_page_budget", "list_time_budget"}``: the values given in ``limits``, else
    ``RUNTIME_GATE_<NAME>`` from the environment, else the defaults. Raises ``KubeAccessError`` for a value
    that is not a positive number, naming the option or variable it came from."""
    environ = os.environ if environ is None else environ
    resolved = {}
    for name, spec in LIMIT_ARG_SPEC.items():
        variable = spec["fallback"][1][0]
        value, origin = (limits or {}).get(name), name
        if value is None and environ.get(variable):
            value, origin = environ[variable], variable
        if value is None:
            value = spec["default"]
        resolved[name] = _positive_number(value, origin, whole=name == "list_page_budget")
    return resolved


def _positive_number(value, origin, whole):
    try:
        number = int(value) if whole else float(value)
    except (TypeError, ValueError, OverflowError):
        number = None
    if isinstance(value, bool) or number is None or not 0 < number < float("inf"):
        unit = "whole number of pages" if whole else "number of seconds"
        raise KubeAccessError(f"{origin} must be a positive {unit}, not {shown_value(value)}")
    return number


def list_cluster_objects(options, include_nodes=False, page_size=DEFAULT_PAGE_SIZE,
                         request_timeout=DEFAULT_REQUEST_TIMEOUT, include_pods=False, request_deadline=None,
                         list_page_budget=None, list_time_budget=None):
    """List node.k8s.io/v1 RuntimeClasses (and core/v1 Nodes, Pods) with ``limit``/``continue`` pagination.

    Returns ``{"runtimeclasses": [...], "nodes": [...], "pods": [...], "server": "https://host:port",
    "api_requests": <HTTP requests sent>}``; items normalised by ``_cluster_objects``
    (``nodes``/``pods`` are ``[]`` unless asked for). Pods come with their ``FailedCreatePodSandBox``
    Events, listed cluster-wide with a field selector: a fixed number of lists, whatever the fleet size.
    The limits left None come from ``RUNTIME_GATE_*`` or their defaults (``resolve_limits``).
    Raises ``KubeAccessError``.
    """
    if not isinstance(page_size, int) or isinstance(page_size, bool) or page_size < 1:
        raise KubeAccessError(f"page_size must be a whole number of at least 1, not {shown_value(page_size)}")
    limits = {"request_deadline": request_deadline, "list_page_budget": list_page_budget,
              "list_time_budget": list_time_budget}
    with ApiSession(options, request_timeout, limits=limits) as session:
        core = kube_client.CoreV1Api(session.client)
        runtimeclass_items = session.list_all(
            "RuntimeClasses (node.k8s.io/v1)", kube_client.NodeV1Api(session.client).list_runtime_class, page_size,
            list_kind="RuntimeClassList")
        node_items = session.list_all("Nodes (v1)", core.list_node, page_size,
                                      list_kind="NodeList") if include_nodes else []
        pod_items, event_items = [], []
        if include_pods:
            pod_items = session.list_all("Pods (v1, all namespaces)", core.list_pod_for_all_namespaces, page_size,
                                         list_kind="PodList")
            event_items = session.list_all(
                f"Events (v1, all namespaces, reason={SANDBOX_FAILURE_REASON})", core.list_event_for_all_namespaces,
                page_size, list_kind="EventList", field_selector=f"reason={SANDBOX_FAILURE_REASON}")
    cluster_objects = normalise_cluster_objects(runtimeclass_items, node_items, f"the API server {session.server}",
                                                pod_objs=pod_items, event_objs=event_items)
    return dict(cluster_objects, server=session.server, api_requests=session.api_requests, warnings=session.warnings)


class ApiSession:
    """One API client for a few calls: every request counted, throttling retried, every failure a ``KubeAccessError``.

    Use as a context manager; ``request(asked, call, **kwargs)`` returns the answer's JSON object.
    ``limits`` as ``resolve_limits`` takes them (None: environment, then defaults).
    """

    def __init__(self, options, request_timeout=DEFAULT_REQUEST_TIMEOUT, sleep=time.sleep, limits=None):
        if not isinstance(request_timeout, (int, float)) or isinstance(request_timeout, bool) or request_timeout <= 0:
            raise KubeAccessError(
                f"request_timeout must be a positive number of seconds, not {shown_value(request_timeout)}")
        self.limits = resolve_limits(limits)
        self.client = build_api_client(options)
        self.server = self.client.configuration.host
        self.request_timeout = request_timeout
        self.secrets = [value for value in self.client.configuration.api_key.values() if value]
        self.secrets += proxy_secrets(self.client.configuration.proxy)
        self.warnings = list(self.client.credential_warnings)
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
        self.client.inline_credential_files.close()

    def list_all(self, what, list_call, page_size, *, list_kind, **selectors):
        """Every item of a list of kind ``list_kind`` (``RuntimeClassList``...), page by page.

        An expired continue token (410) restarts the list once. Each page must be a well-formed ``list_kind``;
        the list must end within ``list_page_budget`` pages and ``list_time_budget`` seconds, and a continue
        token the server already sent fails it at once (it would loop for ever).
        """
        asked = f"listing {what} from {self.server}"
        page_budget, time_budget = self.limits["list_page_budget"], self.limits["list_time_budget"]
        list_deadline = (time.monotonic() + time_budget, time_budget)
        items = []
        continue_token = None
        restarted = False
        page_of_token = {}
        pages = 0
        while True:
            if pages >= page_budget:
                raise KubeAccessError(
                    f"{asked} failed: the list did not end within {page_budget} pages (list_page_budget); the server "
                    "keeps sending continue tokens: raise page_size or list_page_budget if the cluster really is that "
                    "large", self.server)
            pages += 1
            try:
                page = self.request(asked, list_call, limit=page_size, _continue=continue_token,
                                    list_deadline=list_deadline, **selectors)
            except KubeAccessError as err:
                # 410: the continue token expired mid-list; start over once for a consistent list.
                if err.http_status == 410 and continue_token and not restarted:
                    restarted, items, continue_token, page_of_token = True, [], None, {}
                    continue
                raise
            problem = _list_shape_problem(page, list_kind)
            if problem:
                raise KubeAccessError(f"{asked} failed: {problem}", self.server)
            items.extend(page["items"])
            next_token = (page.get("metadata") or {}).get("continue")
            if not next_token:
                return items
            if next_token in page_of_token:
                raise KubeAccessError(
                    f"{asked} failed: page {pages} carries a continue token the server already sent on page "
                    f"{page_of_token[next_token]}: the list would never end", self.server)
            page_of_token[next_token] = pages
            continue_token = next_token

    def request(self, asked, call, *args, list_deadline=None, **kwargs):
        """``call(*args, **kwargs)`` as raw JSON; 429 is retried as Retry-After asks, at most THROTTLE_RETRIES times.

        The whole answer must arrive within ``request_deadline`` seconds, and before ``list_deadline``
        (``(monotonic time, list_time_budget)``) when the request is a page of a list.
        """
        waited = 0
        for attempt in range(THROTTLE_RETRIES + 1):
            try:
                return self._request_once(asked, call, args, kwargs, list_deadline)
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

    def _request_once(self, asked, call, args, kwargs, list_deadline):
        seconds_allowed, out_of_time = self._time_allowed(asked, list_deadline)
        self.api_requests += 1
        # request_timeout applies per socket read; only a thread of its own can bound the whole answer. When it is
        # given up on, its connection is shut down if the answer had begun (headers read), so the thread ends now;
        # else the thread ends at the server's next stop or request_timeout, and holds nothing the caller needs.
        outcome = {}

        def fetch():
            try:
                response = call(*args, _preload_content=False, _request_timeout=self.request_timeout, **kwargs)
                outcome["response"] = response
                outcome["body"] = _read_whole(response)
            except BaseException as err:  # pylint: disable=broad-except
                outcome["error"] = err  # raised again in the caller's thread, which describes it

        worker = threading.Thread(target=fetch, name="runtime-gate-api-request", daemon=True)
        worker.start()
        worker.join(seconds_allowed)
        if worker.is_alive():
            _abandon(outcome.get("response"))
            raise KubeAccessError(out_of_time, self.server)
        try:
            if "error" in outcome:
                raise outcome["error"]
            body = outcome["body"]
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

    def _time_allowed(self, asked, list_deadline):
        """``(seconds the next request may take, the message when they run out)``; raises when none are left."""
        deadline = self.limits["request_deadline"]
        out_of_deadline = (f"{asked} failed: the whole answer did not arrive within {_seconds(deadline)} s "
                           "(request_deadline; request_timeout bounds each read only)")
        if list_deadline is None:
            return deadline, out_of_deadline
        give_up_at, time_budget = list_deadline
        out_of_budget = f"{asked} failed: the list was not read whole within {_seconds(time_budget)} s (list_time_budget)"
        left = give_up_at - time.monotonic()
        if left <= 0:
            raise KubeAccessError(out_of_budget, self.server)
        return (left, out_of_budget) if left < deadline else (deadline, out_of_deadline)

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


def _read_whole(response):
    """The whole body of a urllib3 response, read in chunks (a thread bounds how long that may take)."""
    chunks = []
    while True:
        chunk = response.read(64 * 1024)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _abandon(response):
    """Shut the connection of an answer given up on, so the thread still reading it ends now."""
    if response is None:
        return
    try:
        response.shutdown()  # urllib3 2.3+: unblocks a read in progress in another thread
    except (AttributeError, NotImplementedError, OSError, RuntimeError, ValueError):
        pass  # older urllib3, or already released: the thread ends at the server's next stop or request_timeout


def _list_shape_problem(page, list_kind):
    """What makes ``page`` (a JSON object) something other than a well-formed ``list_kind``, else None.

    An HTTP 200 answer can still be a Status, another kind's list or an object without items (a proxy,
    a broken aggregated API): counting it as an empty list would judge every node against no RuntimeClass.
    """
    kind = page.get("kind")
    if kind is None:
        return f"the answer has no 'kind', expected a {list_kind}"
    if kind == "Status":
        status = page.get("status")
        text = f"the answer is a Status ({cut_text(status) if isinstance(status, str) and status else 'no status'}), " \
               f"not a {list_kind}"
        message = page.get("message")
        return text + (f": {cut_text(message, MAX_SERVER_MESSAGE_CHARS)}" if message else "")
    if kind != list_kind:
        shown = cut_text(kind) if isinstance(kind, str) else f"object of kind {shown_value(kind)}"
        return f"the answer is a {shown}, not a {list_kind}"
    if "items" not in page:
        return f"the {list_kind} has no 'items'"
    items = page["items"]
    if not isinstance(items, list):
        return f"the {list_kind}'s 'items' is {_json_type(items, article=True)}, not a list"
    for number, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            return f"the {list_kind}'s item {number} is {_json_type(item, article=True)}, not a mapping"
    metadata = page.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        return f"the {list_kind}'s 'metadata' is {_json_type(metadata, article=True)}, not a mapping"
    token = (metadata or {}).get("continue")
    if token is not None and not isinstance(token, str):
        return f"the {list_kind}'s 'metadata.continue' is {_json_type(token, article=True)}, not a string"
    return None


def _json_type(value, article=False):
    if value is None:
        return "null"
    name = ("boolean" if isinstance(value, bool) else "number" if isinstance(value, (int, float))
            else "string" if isinstance(value, str) else "list" if isinstance(value, list)
            else "mapping" if isinstance(value, dict) else type(value).__name__)
    return f"a {name}" if article else name


def _seconds(value):
    return f"{value:g}"


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
        return cut_text(status["message"], MAX_SERVER_MESSAGE_CHARS)
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


def _load_kubeconfig(configuration, path, context, secrets, inline_files_directory=None):
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
        # Inline *-data is written into a private directory, then moved off the disk (_kube_credentials).
        kube_config.load_kube_config(config_file=path, context=context, client_configuration=configuration,
                                     persist_config=False, temp_file_path=inline_files_directory)
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
