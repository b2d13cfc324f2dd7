"""A Kubernetes API server stand-in on the standard library, for the kubernetes client and kubectl.

No apiserver, kind, k3s or envtest binary is installable here, so this serves the real REST shapes
over HTTPS on 127.0.0.1: discovery, list/get of RuntimeClasses (node.k8s.io/v1), Nodes, Pods and
Events (core/v1) with ``limit``/``continue`` and the apiserver's field selectors, create/replace/
patch/delete of RuntimeClasses (with the handler's validation), of ClusterRoles/ClusterRoleBindings
(rbac.authorization.k8s.io/v1), ServiceAccounts and Namespaces (stored as sent: enough for
``kubectl apply`` and reading back, no RBAC enforcement), Bearer-token or client-certificate auth,
Status errors, injected failures (429 with Retry-After, 410 on continue tokens, ...) and delays, answers of
the wrong shape (``answer_with``), answers dribbled a byte at a time (``drip``), lists whose continue tokens never
settle (``endless_continue``), and a request log. Every misbehaviour stops by itself, so a client without limits
ends its test late rather than never.
"""

import base64
import dataclasses
import json
import re
import ssl
import subprocess
import threading
import time
import traceback
import uuid
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

WRITE_VERBS = ["create", "delete", "get", "list", "patch", "update"]
RBAC_PREFIX = "/apis/rbac.authorization.k8s.io/v1"
RESOURCES = {
    "runtimeclasses": {"prefix": "/apis/node.k8s.io/v1", "group": "node.k8s.io", "kind": "RuntimeClass",
                       "singular": "runtimeclass", "namespaced": False, "short": [], "verbs": WRITE_VERBS},
    "nodes": {"prefix": "/api/v1", "group": "", "kind": "Node", "singular": "node", "namespaced": False,
              "short": ["no"], "verbs": ["get", "list"]},
    "pods": {"prefix": "/api/v1", "group": "", "kind": "Pod", "singular": "pod", "namespaced": True,
             "short": ["po"], "verbs": ["get", "list"]},
    "events": {"prefix": "/api/v1", "group": "", "kind": "Event", "singular": "event", "namespaced": True,
               "short": ["ev"], "verbs": ["get", "list"]},
    "namespaces": {"prefix": "/api/v1", "group": "", "kind": "Namespace", "singular": "namespace",
                   "namespaced": False, "short": ["ns"], "verbs": WRITE_VERBS},
    "serviceaccounts": {"prefix": "/api/v1", "group": "", "kind": "ServiceAccount", "singular": "serviceaccount",
                        "namespaced": True, "short": ["sa"], "verbs": WRITE_VERBS},
    "clusterroles": {"prefix": RBAC_PREFIX, "group": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "singular": "clusterrole", "namespaced": False, "short": [], "verbs": WRITE_VERBS},
    "clusterrolebindings": {"prefix": RBAC_PREFIX, "group": "rbac.authorization.k8s.io", "kind": "ClusterRoleBinding",
                            "singular": "clusterrolebinding", "namespaced": False, "short": [], "verbs": WRITE_VERBS},
}
API_GROUPS = {"/apis/node.k8s.io/v1": "node.k8s.io", RBAC_PREFIX: "rbac.authorization.k8s.io"}
# The field labels the apiserver accepts per resource (pkg/registry/core/{pod,event}/strategy.go
# ToSelectableFields; every other resource: metadata.name, plus metadata.namespace when namespaced).
# Anything else is refused with "field label not supported", as pkg/apis/core/v1/conversion.go does.
FIELD_SELECTORS = {
    "pods": {"metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
             "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"},
    "events": {"metadata.name", "metadata.namespace", "involvedObject.kind", "involvedObject.namespace",
               "involvedObject.name", "involvedObject.uid", "involvedObject.apiVersion",
               "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason", "reportingComponent",
               "source", "type"},
}
# Field labels whose value lives elsewhere in the object.
FIELD_PATHS = {"source": "source.component"}
STATUS_REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed", 409: "AlreadyExists",
                  410: "Expired", 415: "UnsupportedMediaType", 422: "Invalid", 429: "TooManyRequests",
                  500: "InternalError", 503: "ServiceUnavailable"}
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")  # fullmatch, as the apiserver: no trailing newline


@dataclasses.dataclass(frozen=True)
class TlsMaterial:
    ca_path: Path
    server_cert_path: Path
    server_key_path: Path
    client_cert_path: Path
    client_key_path: Path


@dataclasses.dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: dict


def make_tls_material(directory, name="kube-standin"):
    """A CA, a server certificate for 127.0.0.1/localhost and a client certificate, via the openssl CLI."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    ec_key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    def run(*args):
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)

    run("req", "-x509", *ec_key, "-keyout", "ca.key", "-out", "ca.crt", "-days", "3", "-subj", f"/CN={name} CA",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    for role, subject, extensions in (
        ("server", f"/CN={name}", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"),
        ("client", "/O=system:masters/CN=standin-admin", "extendedKeyUsage=clientAuth\n"),
    ):
        (directory / f"{role}.ext").write_text(
            extensions + "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
            "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n")
        run("req", "-new", *ec_key, "-keyout", f"{role}.key", "-out", f"{role}.csr", "-subj", subject)
        run("x509", "-req", "-in", f"{role}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{role}.crt", "-days", "3", "-extfile", f"{role}.ext")
    return TlsMaterial(directory / "ca.crt", directory / "server.crt", directory / "server.key",
                       directory / "client.crt", directory / "client.key")


class KubeStandIn:
    """Start with ``start()`` (or ``with``); ``url``, ``token``, ``ca_path``, ``kubeconfig_path`` then serve clients.

    ``max_page`` caps every page of a list that carries ``limit`` (as an apiserver may return fewer
    than asked); without ``limit`` a list is answered whole, as a real apiserver does.
    ``plain_http`` serves ``http://`` without TLS (a misconfigured or port-forwarded server): the bearer token is then
    the only credential, and it crosses the wire in clear.
    """

    def __init__(self, tls, workdir, token="standin-token-8a1f3c9e", max_page=2, plain_http=False):
        self.tls = tls
        self.plain_http = plain_http
        self.workdir = Path(workdir)
        self.token = token
        self.max_page = max_page
        self.ca_path = tls.ca_path
        self.kubeconfig_path = self.workdir / "kubeconfig.yaml"
        self.requests = []
        self.handler_errors = []
        self.delay_seconds = 0
        self._store = {resource: {} for resource in RESOURCES}
        self._failures = {}
        self._drips = {}
        self._endless_continues = {}
        self._resource_version = 1000
        self._lock = threading.Lock()
        self._server = None
        self._thread = None

    # --- lifecycle -------------------------------------------------------------------------------
    def start(self):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.tls.server_cert_path, self.tls.server_key_path)
        context.load_verify_locations(self.tls.ca_path)
        context.verify_mode = ssl.CERT_OPTIONAL
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.standin = self
        # Handshake in the handler thread: a client that rejects our certificate must not stall accept().
        if not self.plain_http:
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True,
                                                      do_handshake_on_connect=False)
        self._thread = threading.Thread(target=self._server.serve_forever, name="kube-standin", daemon=True)
        self._thread.start()
        self.write_kubeconfig(self.kubeconfig_path)
        return self

    def stop(self):
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=5)
            self._server = None

    __enter__ = start

    def __exit__(self, *exc_info):
        self.stop()

    @property
    def port(self):
        return self._server.server_address[1]

    @property
    def url(self):
        return f"{'http' if self.plain_http else 'https'}://127.0.0.1:{self.port}"

    def write_kubeconfig(self, path, current_context="standin"):
        """Contexts ``standin`` (the real token) and ``standin-bad-token`` (rejected with 401)."""
        cluster = {"server": self.url, "certificate-authority": str(self.ca_path)}
        users = [{"name": "standin-admin", "user": {"token": self.token}},
                 {"name": "standin-bad", "user": {"token": "not-the-standin-token"}}]
        contexts = [{"name": "standin", "context": {"cluster": "standin", "user": "standin-admin"}},
                    {"name": "standin-bad-token", "context": {"cluster": "standin", "user": "standin-bad"}}]
        Path(path).write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "clusters": [{"name": "standin", "cluster": cluster}],
            "users": users, "contexts": contexts, "current-context": current_context}, indent=2))
        return Path(path)

    # --- test controls ---------------------------------------------------------------------------
    def set_objects(self, runtimeclasses=None, nodes=None, pods=None, events=None):
        """Replace the stored objects of each resource given (raw camelCase dicts); a given uid is kept."""
        with self._lock:
            for resource, objects in (("runtimeclasses", runtimeclasses), ("nodes", nodes), ("pods", pods),
                                      ("events", events)):
                if objects is not None:
                    self._store[resource] = {}
                    for obj in objects:
                        stored = self._stamp(resource, json.loads(json.dumps(obj)))
                        self._store[resource][_object_key(stored)] = stored

    def fail(self, resource, status, message=None, times=None, skip=0, retry_after=None, on_continue=False):
        """Answer requests for ``resource`` with ``status`` after ``skip`` good ones, ``times`` times (None: always).

        ``retry_after`` adds a Retry-After header (429); ``on_continue`` limits the failure to list requests
        that carry a continue token (410: the token expired, as after etcd compaction).
        """
        with self._lock:
            self._failures[resource] = {"status": status, "message": message, "times": times, "skip": skip,
                                        "retry_after": retry_after, "on_continue": on_continue}

    def fail_next(self, resource, status, message=None):
        self.fail(resource, status, message, times=1)

    def answer_with(self, resource, payload, status=200, times=None):
        """Answer requests for ``resource`` with ``status`` and ``payload`` (any JSON value) as sent, ``times`` times."""
        self.fail(resource, status, times=times)
        with self._lock:
            self._failures[resource]["payload"] = payload

    def drip(self, resource, phase="body", interval=0.2, stop_after=6.0):
        """Send answers for ``resource`` one byte every ``interval`` seconds: the headers (``phase="headers"``) or
        only the body. Each read a client makes gets a byte in time, so only a deadline on the whole answer ends it;
        after ``stop_after`` seconds the stand-in closes the connection by itself, mid-answer."""
        assert phase in ("headers", "body"), phase
        with self._lock:
            self._drips[resource] = {"phase": phase, "interval": interval, "stop_after": stop_after}

    def endless_continue(self, resource, tokens="alternating", pages=50):
        """List pages of ``resource`` whose continue token never settles: two values in turn (``"alternating"``)
        or a new one each page (``"fresh"``). Every page holds the first stored object; the list ends by itself
        after ``pages`` pages (a last page without a token), however the client follows it."""
        assert tokens in ("alternating", "fresh"), tokens
        with self._lock:
            self._endless_continues[resource] = {"tokens": tokens, "pages": pages, "sent": 0}

    def clear_failures(self):
        with self._lock:
            self._failures.clear()
            self._drips.clear()
            self._endless_continues.clear()

    def list_calls(self, resource):
        """Logged GET requests on the collection path of ``resource`` (one per page)."""
        return [request for request in self.requests
                if request.method == "GET" and (_route(request.path) or (None, None, "x"))[::2] == (resource, None)]

    def stored(self, resource):
        """The stored objects of ``resource`` (copies), sorted by namespace/name."""
        with self._lock:
            return [json.loads(json.dumps(obj)) for _key, obj in sorted(self._store[resource].items())]

    # --- request handling ------------------------------------------------------------------------
    def handle(self, handler, method):
        parts = urlsplit(handler.path)
        path = parts.path.rstrip("/") or "/"
        query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        with self._lock:
            self.requests.append(RecordedRequest(method, path, query))
        if not self._authorized(handler):
            return _send(handler, 401, _status(401, "Unauthorized"))
        if self.delay_seconds:
            time.sleep(self.delay_seconds)
        discovery = self._discovery(path)
        if discovery is not None and method == "GET":
            return _send(handler, 200, discovery)
        route = _route(path)
        if route is None:
            return _send(handler, 404, _status(404, "the server could not find the requested resource"))
        resource, namespace, name = route
        failure = self._take_failure(resource, method, name, "continue" in query)
        if failure:
            headers = {"Retry-After": str(failure["retry_after"])} if failure["retry_after"] is not None else {}
            payload = failure["payload"] if "payload" in failure else _status(failure["status"], failure["message"])
            return _send(handler, failure["status"], payload, headers)
        with self._lock:
            endless = self._endless_continues.get(resource) if method == "GET" and name is None else None
            if endless:
                code, answer = self._endless_page(resource, endless)
            else:
                code, answer = self._serve(method, resource, namespace, name, query, body,
                                           handler.headers.get("Content-Type", ""))
            drip = self._drips.get(resource)
        if drip:
            return _send_dripping(handler, code, answer, **drip)
        return _send(handler, code, answer)

    def _authorized(self, handler):
        if handler.headers.get("Authorization", "") == f"Bearer {self.token}":
            return True
        try:
            return bool(handler.connection.getpeercert())
        except (AttributeError, ValueError, ssl.SSLError):  # AttributeError: plain http, no certificate
            return False

    def _take_failure(self, resource, method, name, continued):
        with self._lock:
            failure = self._failures.get(resource)
            if not failure or (failure["on_continue"] and not continued):
                return None
            if failure["skip"] > 0:
                failure["skip"] -= 1
                return None
            if failure["times"] is not None:
                failure["times"] -= 1
                if failure["times"] <= 0:
                    del self._failures[resource]
            taken = {"status": failure["status"], "retry_after": failure["retry_after"],
                     "message": failure["message"] or _default_failure_message(failure["status"], resource, method, name)}
            if "payload" in failure:
                taken["payload"] = failure["payload"]
            return taken

    def _serve(self, method, resource, namespace, name, query, body, content_type):
        objects = self._store[resource]
        info = RESOURCES[resource]
        qualified = resource + (f".{info['group']}" if info["group"] else "")
        key = f"{namespace}/{name}" if namespace else name
        if method == "GET" and name is None:
            return self._list(resource, namespace, query)
        if method == "GET":
            found = objects.get(key)
            return (200, found) if found else (404, _status(404, f'{qualified} "{name}" not found'))
        if "create" not in info["verbs"] or (method == "POST") != (name is None):
            return 405, _status(405, f"the stand-in does not support {method} on {qualified}")
        if method == "DELETE":
            deleted = objects.pop(key, None)
            return (200, deleted) if deleted else (404, _status(404, f'{qualified} "{name}" not found'))
        try:
            sent = json.loads(body or b"null")
        except ValueError:
            return 400, _status(400, "the request body is not JSON")
        if method == "PATCH":
            if "merge-patch" not in content_type:
                return 415, _status(415, f"the stand-in takes merge and strategic-merge patches, not {content_type}")
            if key not in objects:
                return 404, _status(404, f'{qualified} "{name}" not found')
            sent = _merge_patch(objects[key], sent)
        if not isinstance(sent, dict) or not (sent.get("metadata") or {}).get("name"):
            return 400, _status(400, "the object has no metadata.name")
        if info["namespaced"]:
            sent["metadata"]["namespace"] = namespace
            if namespace not in self._store["namespaces"]:
                return 404, _status(404, f'namespaces "{namespace}" not found')
        key = f"{namespace}/{sent['metadata']['name']}" if namespace else sent["metadata"]["name"]
        if resource != "runtimeclasses":
            return self._write(method, resource, objects, key, sent, qualified)
        handler = sent.get("handler")
        if not isinstance(handler, str) or not DNS_LABEL.fullmatch(handler):
            return 422, _status(422, f'RuntimeClass.node.k8s.io "{key}" is invalid: handler: Invalid value: '
                                     f'{json.dumps(handler)}: must be a DNS label')
        if method != "POST" and key in objects and objects[key]["handler"] != handler:
            return 422, _status(422, f'RuntimeClass.node.k8s.io "{key}" is invalid: handler: Invalid value: '
                                     f'"{handler}": field is immutable')
        return self._write(method, resource, objects, key, sent, qualified)

    def _write(self, method, resource, objects, key, sent, qualified):
        if method == "POST" and key in objects:
            return 409, _status(409, f'{qualified} "{key.rsplit("/", 1)[-1]}" already exists')
        if method != "POST" and key not in objects:
            return 404, _status(404, f'{qualified} "{key.rsplit("/", 1)[-1]}" not found')
        sent_version = (sent.get("metadata") or {}).get("resourceVersion")
        if method == "PUT" and sent_version and sent_version != objects[key]["metadata"]["resourceVersion"]:
            return 409, _status(409, f'Operation cannot be fulfilled on {qualified} "{key.rsplit("/", 1)[-1]}": '
                                     "the object has been modified; please apply your changes to the latest "
                                     "version and try again")
        objects[key] = self._stamp(resource, sent, previous=objects.get(key))
        return (201 if method == "POST" else 200), objects[key]

    def _list(self, resource, namespace, query):
        info = RESOURCES[resource]
        if query.get("labelSelector"):
            return 400, _status(400, "the stand-in does not evaluate labelSelector")
        supported = FIELD_SELECTORS.get(resource, {"metadata.name", "metadata.namespace"} if info["namespaced"]
                                        else {"metadata.name"})
        wanted = []
        for term in filter(None, (query.get("fieldSelector") or "").split(",")):
            found = re.fullmatch(r"([^=!]+)(==|=|!=)(.*)", term.strip())
            if not found:
                return 400, _status(400, f'invalid selector: \'{query["fieldSelector"]}\'; can\'t understand \'{term}\'')
            label, operator, value = found.groups()
            if label not in supported:
                return 400, _status(400, f'"{label}" is not a known field selector: only "'
                                         + '", "'.join(sorted(supported)) + '"')
            wanted.append((FIELD_PATHS.get(label, label), operator != "!=", value))
        start_after = ""
        if query.get("continue"):
            try:
                start_after = base64.urlsafe_b64decode(query["continue"]).decode()
            except ValueError:
                return 400, _status(400, "continue key is not valid")
        selected = [obj for key, obj in sorted(self._store[resource].items())
                    if key > start_after and (namespace is None or obj["metadata"].get("namespace") == namespace)
                    and all((_field(obj, path) == value) == equal for path, equal, value in wanted)]
        limit = int(query.get("limit") or 0)
        page = selected[: min(limit, self.max_page)] if limit > 0 else selected
        metadata = {"resourceVersion": str(self._resource_version)}
        if len(page) < len(selected):
            metadata["continue"] = base64.urlsafe_b64encode(_object_key(page[-1]).encode()).decode()
            metadata["remainingItemCount"] = len(selected) - len(page)
        # A typed list's items carry no kind/apiVersion on the wire; the list says what they are.
        items = [{k: v for k, v in obj.items() if k not in ("kind", "apiVersion")} for obj in page]
        return 200, {"kind": f"{info['kind']}List", "apiVersion": _api_version(resource),
                     "metadata": metadata, "items": items}

    def _endless_page(self, resource, endless):
        """One page of a list whose continue token never settles (see ``endless_continue``)."""
        info = RESOURCES[resource]
        endless["sent"] += 1
        metadata = {"resourceVersion": str(self._resource_version)}
        if endless["sent"] < endless["pages"]:
            number = endless["sent"] % 2 if endless["tokens"] == "alternating" else endless["sent"]
            metadata["continue"] = base64.urlsafe_b64encode(f"page-{number}".encode()).decode()
        first = [obj for _key, obj in sorted(self._store[resource].items())][:1]
        items = [{k: v for k, v in obj.items() if k not in ("kind", "apiVersion")} for obj in first]
        return 200, {"kind": f"{info['kind']}List", "apiVersion": _api_version(resource), "metadata": metadata,
                     "items": items}

    def _stamp(self, resource, obj, previous=None):
        self._resource_version += 1
        obj.setdefault("kind", RESOURCES[resource]["kind"])
        obj.setdefault("apiVersion", _api_version(resource))
        metadata = obj.setdefault("metadata", {})
        previous_metadata = (previous or {}).get("metadata", {})
        metadata["uid"] = previous_metadata.get("uid") or metadata.get("uid") or str(uuid.uuid4())
        metadata["creationTimestamp"] = previous_metadata.get("creationTimestamp") or "2026-01-01T00:00:00Z"
        metadata["resourceVersion"] = str(self._resource_version)
        return obj

    def _discovery(self, path):
        if path == "/version":
            return {"major": "1", "minor": "33", "gitVersion": "v1.33.0", "gitCommit": "standin",
                    "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24.0",
                    "compiler": "gc", "platform": "linux/amd64"}
        if path == "/api":
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs":
                    [{"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{self.port}"}]}
        groups = {name: {"name": name, "versions": [{"groupVersion": f"{name}/v1", "version": "v1"}],
                         "preferredVersion": {"groupVersion": f"{name}/v1", "version": "v1"}}
                  for name in API_GROUPS.values()}
        if path == "/apis":
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": list(groups.values())}
        if path.startswith("/apis/") and path[len("/apis/"):] in groups:
            return {"kind": "APIGroup", "apiVersion": "v1", **groups[path[len("/apis/"):]]}
        for prefix, group_version in (("/api/v1", "v1"), *((prefix, f"{name}/v1") for prefix, name in API_GROUPS.items())):
            if path == prefix:
                return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": [
                    {"name": name, "singularName": info["singular"], "namespaced": info["namespaced"],
                     "kind": info["kind"], "verbs": info["verbs"], "shortNames": info["short"]}
                    for name, info in RESOURCES.items() if info["prefix"] == prefix]}
        return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        """TLS handshakes a client aborts (wrong CA tests) are expected; stay quiet."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kube-standin/1"

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        """The request log lives in ``KubeStandIn.requests``."""

    def _dispatch(self):
        try:
            self.server.standin.handle(self, self.command)
        except (ConnectionError, ssl.SSLError):
            self.close_connection = True
        except Exception:  # pylint: disable=broad-except
            self.server.standin.handler_errors.append(traceback.format_exc())
            _send(self, 500, _status(500, "stand-in internal error"))

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _dispatch


def _route(path):
    """(resource, namespace, name) for a resource path, else None; a cluster-wide list has namespace None."""
    for resource, info in RESOURCES.items():
        if info["namespaced"]:
            match = re.fullmatch(rf"{re.escape(info['prefix'])}/namespaces/([^/]+)/{resource}(?:/([^/]+))?", path)
            if match:
                return resource, match.group(1), match.group(2)
        match = re.fullmatch(rf"{re.escape(info['prefix'])}/{resource}(?:/([^/]+))?", path)
        if match and not (info["namespaced"] and match.group(1)):
            return resource, None, match.group(1)
    return None


def _api_version(resource):
    group = RESOURCES[resource]["group"]
    return f"{group}/v1" if group else "v1"


def _object_key(obj):
    namespace = obj["metadata"].get("namespace")
    return f"{namespace}/{obj['metadata']['name']}" if namespace else obj["metadata"]["name"]


def _field(obj, label):
    value = obj
    for part in label.split("."):
        value = (value or {}).get(part)
    return value or ""


def _merge_patch(target, patch):
    """RFC 7386 merge; strategic merge reduces to it for RuntimeClass (its lists are atomic)."""
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = _merge_patch(merged.get(key), value)
    return merged


def _status(code, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": STATUS_REASONS.get(code, "Unknown"), "code": code}


def _default_failure_message(status, resource, method, name):
    info = RESOURCES[resource]
    qualified = resource + (f".{info['group']}" if info["group"] else "")
    verb = {"GET": "list" if name is None else "get", "POST": "create", "PUT": "update",
            "PATCH": "patch", "DELETE": "delete"}[method]
    return {
        401: "Unauthorized",
        403: f'{qualified} is forbidden: User "system:serviceaccount:gpu-checks:runtime-gate" cannot {verb} '
             f'resource "{resource}" in API group "{info["group"]}" at the cluster scope',
        404: "the server could not find the requested resource",
        410: "The provided continue parameter is too old to display a consistent list result.",
        429: "Too many requests, please try again later.",
        500: "Internal error occurred: etcdserver: request timed out",
        503: "the server is currently unable to handle the request",
    }.get(status, f"injected failure {status}")


def _send_dripping(handler, code, payload, phase, interval, stop_after):
    """The answer ``_send`` would give, written one byte every ``interval`` s (from the status line on, or only
    the body); the connection is closed after ``stop_after`` s or as soon as the client goes away."""
    body = json.dumps(payload).encode()
    head = (f"HTTP/1.1 {code} {HTTPStatus(code).phrase}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    handler.close_connection = True
    stop_at = time.monotonic() + stop_after
    try:
        if phase == "body":
            handler.wfile.write(head)
        dripped = body if phase == "body" else head + body
        for offset in range(len(dripped)):
            if time.monotonic() >= stop_at:
                return
            handler.wfile.write(dripped[offset:offset + 1])
            time.sleep(interval)
    except OSError:
        return  # the client gave up and closed the connection: that is what a deadline does


def _send(handler, code, payload, headers=None):
    body = json.dumps(payload).encode()
    handler.send_response(code)
    handler.send_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)
