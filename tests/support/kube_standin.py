"""A Kubernetes API server stand-in on the standard library, for the kubernetes client and kubectl.

No apiserver, kind, k3s or envtest binary is installable here, so this serves the real REST shapes
over HTTPS on 127.0.0.1: discovery, list/get of RuntimeClasses (node.k8s.io/v1), Nodes and Pods
(core/v1) with ``limit``/``continue``, create/replace/patch/delete of RuntimeClasses, Bearer-token or
client-certificate auth, Status errors, injected failures and delays, and a request log.
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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

RESOURCES = {
    "runtimeclasses": {"prefix": "/apis/node.k8s.io/v1", "group": "node.k8s.io", "kind": "RuntimeClass",
                       "singular": "runtimeclass", "namespaced": False, "short": [],
                       "verbs": ["create", "delete", "get", "list", "patch", "update"]},
    "nodes": {"prefix": "/api/v1", "group": "", "kind": "Node", "singular": "node", "namespaced": False,
              "short": ["no"], "verbs": ["get", "list"]},
    "pods": {"prefix": "/api/v1", "group": "", "kind": "Pod", "singular": "pod", "namespaced": True,
             "short": ["po"], "verbs": ["get", "list"]},
}
FIELD_SELECTORS = {"metadata.name", "metadata.namespace", "spec.nodeName", "status.phase"}
STATUS_REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed", 409: "AlreadyExists",
                  410: "Expired", 415: "UnsupportedMediaType", 422: "Invalid", 500: "InternalError",
                  503: "ServiceUnavailable"}
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


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
    """

    def __init__(self, tls, workdir, token="standin-token-8a1f3c9e", max_page=2):
        self.tls = tls
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
        return f"https://127.0.0.1:{self.port}"

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
    def set_objects(self, runtimeclasses=None, nodes=None, pods=None):
        """Replace the stored objects of each resource given (raw camelCase dicts)."""
        with self._lock:
            for resource, objects in (("runtimeclasses", runtimeclasses), ("nodes", nodes), ("pods", pods)):
                if objects is not None:
                    self._store[resource] = {}
                    for obj in objects:
                        stored = self._stamp(resource, json.loads(json.dumps(obj)))
                        self._store[resource][_object_key(stored)] = stored

    def fail(self, resource, status, message=None, times=None, skip=0):
        """Answer requests for ``resource`` with ``status`` after ``skip`` good ones, ``times`` times (None: always)."""
        with self._lock:
            self._failures[resource] = {"status": status, "message": message, "times": times, "skip": skip}

    def fail_next(self, resource, status, message=None):
        self.fail(resource, status, message, times=1)

    def clear_failures(self):
        with self._lock:
            self._failures.clear()

    def list_calls(self, resource):
        """Logged GET requests on the collection path of ``resource`` (one per page)."""
        collection = f"{RESOURCES[resource]['prefix']}/{resource}"
        return [request for request in self.requests if request.method == "GET"
                and (request.path == collection or (request.path.endswith(f"/{resource}")
                                                    and request.path.startswith("/api/v1/namespaces/")))]

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
        failure = self._take_failure(resource, method, name)
        if failure:
            return _send(handler, failure["status"], _status(failure["status"], failure["message"]))
        with self._lock:
            code, answer = self._serve(method, resource, namespace, name, query, body,
                                       handler.headers.get("Content-Type", ""))
        return _send(handler, code, answer)

    def _authorized(self, handler):
        if handler.headers.get("Authorization", "") == f"Bearer {self.token}":
            return True
        try:
            return bool(handler.connection.getpeercert())
        except (ValueError, ssl.SSLError):
            return False

    def _take_failure(self, resource, method, name):
        with self._lock:
            failure = self._failures.get(resource)
            if not failure:
                return None
            if failure["skip"] > 0:
                failure["skip"] -= 1
                return None
            if failure["times"] is not None:
                failure["times"] -= 1
                if failure["times"] <= 0:
                    del self._failures[resource]
            return {"status": failure["status"],
                    "message": failure["message"] or _default_failure_message(failure["status"], resource, method, name)}

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
        if resource != "runtimeclasses" or (method == "POST") != (name is None):
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
        key = sent["metadata"]["name"]
        handler = sent.get("handler")
        if not isinstance(handler, str) or not DNS_LABEL.match(handler):
            return 422, _status(422, f'RuntimeClass.node.k8s.io "{key}" is invalid: handler: Invalid value: '
                                     f'{json.dumps(handler)}: must be a DNS label')
        if method == "POST" and key in objects:
            return 409, _status(409, f'{qualified} "{key}" already exists')
        if method != "POST" and key not in objects:
            return 404, _status(404, f'{qualified} "{name}" not found')
        if method != "POST" and objects[key]["handler"] != handler:
            return 422, _status(422, f'RuntimeClass.node.k8s.io "{key}" is invalid: handler: Invalid value: '
                                     f'"{handler}": field is immutable')
        objects[key] = self._stamp(resource, sent, previous=objects.get(key))
        return (201 if method == "POST" else 200), objects[key]

    def _list(self, resource, namespace, query):
        info = RESOURCES[resource]
        if query.get("labelSelector"):
            return 400, _status(400, "the stand-in does not evaluate labelSelector")
        wanted = {}
        for term in filter(None, (query.get("fieldSelector") or "").split(",")):
            label, _equals, value = term.partition("=")
            if label not in FIELD_SELECTORS or (label != "metadata.name" and not info["namespaced"]):
                return 400, _status(400, f"field label not supported: {label}")
            wanted[label] = value.lstrip("=")
        start_after = ""
        if query.get("continue"):
            try:
                start_after = base64.urlsafe_b64decode(query["continue"]).decode()
            except ValueError:
                return 400, _status(400, "continue key is not valid")
        selected = [obj for key, obj in sorted(self._store[resource].items())
                    if key > start_after and (namespace is None or obj["metadata"].get("namespace") == namespace)
                    and all(_field(obj, label) == value for label, value in wanted.items())]
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

    def _stamp(self, resource, obj, previous=None):
        self._resource_version += 1
        obj.setdefault("kind", RESOURCES[resource]["kind"])
        obj.setdefault("apiVersion", _api_version(resource))
        metadata = obj.setdefault("metadata", {})
        previous_metadata = (previous or {}).get("metadata", {})
        metadata["uid"] = previous_metadata.get("uid") or str(uuid.uuid4())
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
        group = {"name": "node.k8s.io", "versions": [{"groupVersion": "node.k8s.io/v1", "version": "v1"}],
                 "preferredVersion": {"groupVersion": "node.k8s.io/v1", "version": "v1"}}
        if path == "/apis":
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [group]}
        if path == "/apis/node.k8s.io":
            return {"kind": "APIGroup", "apiVersion": "v1", **group}
        for group_version, prefix in (("v1", "/api/v1"), ("node.k8s.io/v1", "/apis/node.k8s.io/v1")):
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
    """(resource, namespace, name) for a resource path, else None."""
    for resource, info in RESOURCES.items():
        base = f"{info['prefix']}/{resource}"
        if path == base:
            return resource, None, None
        if path.startswith(base + "/") and "/" not in path[len(base) + 1:]:
            return resource, None, path[len(base) + 1:]
    match = re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods(?:/([^/]+))?", path)
    return ("pods", match.group(1), match.group(2)) if match else None


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
        500: "Internal error occurred: etcdserver: request timed out",
        503: "the server is currently unable to handle the request",
    }.get(status, f"injected failure {status}")


def _send(handler, code, payload):
    body = json.dumps(payload).encode()
    handler.send_response(code)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)
