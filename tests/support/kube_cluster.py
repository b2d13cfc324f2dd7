"""A real Kubernetes control plane on loopback, for the tests in tests/integration/cluster.

What runs (binaries built from the Go module proxy by ``tools/build-components``, read from its manifest
``components.json``; a missing one skips locally and FAILS under CI, as ``support.tools.require_tool`` does):

- etcd v3.6.16, TLS with client certificates, ``--unsafe-no-fsync`` (a test cluster: speed over durability);
- kube-apiserver v1.34.4, TLS, client certificates and ServiceAccount tokens (its own signing key),
  ``--authorization-mode=Node,RBAC`` and the default admission plugins (RuntimeClass among them: it copies a
  class's ``overhead.podFixed`` into each new pod's ``spec.overhead``) less ``TaintNodesByCondition`` (below);
- kube-scheduler v1.34.4 with a client certificate of its own (``system:kube-scheduler``, the bootstrap RBAC role);
- kwok v0.7.0 (``--manage-all-nodes``), which plays the kubelet of every Node: marks it Ready, runs bound pods.

How each piece is made (``start_cluster``):

- certificates: one throw-away CA per cluster, made with the openssl CLI (EC P-256, 3 days); serving certificates
  for 127.0.0.1/localhost (apiserver and scheduler; etcd's own, also good for client authentication, because etcd's
  JSON gateway dials etcd with it), and client certificates whose subject is the identity RBAC sees:
  ``kube-apiserver-etcd-client`` (etcd), ``gate-admin`` in ``system:masters`` (the tests' admin),
  ``system:kube-scheduler``, and ``kwok-controller`` in ``system:masters`` (one process answers for every Node, so the
  per-node ``system:node:<name>`` identity the Node authorizer expects cannot be used);
- ServiceAccount tokens: an EC P-256 key pair from openssl; the apiserver signs with the private key and verifies
  with the public one; ``KubeCluster.token`` asks for one with ``kubectl create token`` (TokenRequest API);
- ports: free loopback ports picked by binding port 0 just before the start;
- audit log (``AUDIT_POLICY``): the requests of the collection's ServiceAccounts and every RuntimeClass write, so
  tests can read what the server was really asked (``KubeCluster.audit_events``);
- no kube-controller-manager runs, so two of its jobs are done otherwise: ``TaintNodesByCondition`` admission is
  disabled (it taints every new Node ``not-ready``, and only the node lifecycle controller lifts that taint), and
  ``KubeCluster.namespace`` creates the ``default`` ServiceAccount the ServiceAccount admission plugin requires of
  every pod's namespace (the serviceaccount controller's job);
- start-up is bounded: each component must answer its health endpoint (etcd /health, apiserver /readyz, scheduler
  /readyz, kwok /healthz) before ``START_SECONDS`` in all, else the test fails with that component's log tail;
- stop: every component runs in a process group of its own (``start_new_session``) and the group is sent SIGTERM,
  then SIGKILL after ``STOP_SECONDS``; ``stop`` is called from the fixture's ``finally``, and each component also
  has the kernel kill it should the test process die without reaching it (``setpriv --pdeathsig``).
"""
from __future__ import annotations

import base64
import json
import os
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from support.containerd_daemons import components
from support.tools import require_command, require_tool

COMPONENTS = ("etcd", "kube-apiserver", "kube-scheduler", "kwok")
START_SECONDS = 90
STOP_SECONDS = 10
SERVICE_CIDR = "10.96.0.0/16"
SETPRIV = "/usr/bin/setpriv"
# What the apiserver records (--audit-policy-file): every request of the collection's ServiceAccounts (namespace
# gpu-checks, docs/rbac.yaml), so a test can list the verbs they really used, and every write to a RuntimeClass with
# its request body (a conditional update carries metadata.resourceVersion). Nothing else, to keep the log small.
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
    "rules": [
        {"level": "Request", "verbs": ["create", "update", "patch", "delete"],
         "resources": [{"group": "node.k8s.io", "resources": ["runtimeclasses"]}]},
        {"level": "Metadata", "userGroups": ["system:serviceaccounts:gpu-checks"]},
        {"level": "None"},
    ]}
# Ready, as kwok's node-initialize stage reports it; pods bind as soon as the scheduler sees the Node.
NODE_READY_SECONDS = 30
# The label of the Nodes kwok plays when real kubelets run beside it (start_cluster(kwok="labelled")).
KWOK_LABEL = "kwok.gpufleet.io/fake"


def binaries(names=COMPONENTS) -> dict:
    """name -> path of each built component; fails under CI (skips elsewhere) when one is not built."""
    built = components()
    found = {}
    for name in names:
        entry = built.get(name)
        require_tool(entry is not None and os.access(entry["path"], os.X_OK),
                     f"{name} is not built: run tools/build-components {name} (make test does)")
        found[name] = entry["path"]
    return found


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Component:
    name: str
    process: subprocess.Popen
    log_path: Path

    def log_tail(self, lines=40) -> str:
        text = self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self):
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.process.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                pass
        # The group may hold children even when the leader is gone; SIGKILL whatever is left of it.
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.process.poll() is None:
            self.process.wait(timeout=STOP_SECONDS)


class ClusterNotReady(Exception):
    """A component did not come up in time (the message holds its log tail)."""


@dataclass
class KubeCluster:
    """A running control plane; ``server``, ``ca_path`` and ``admin_kubeconfig`` are what clients need."""

    workdir: Path
    server: str
    ca_path: Path
    admin_kubeconfig: Path
    etcd_url: str
    pki: Path
    components: dict = field(default_factory=dict)
    kubectl_bin: str = "kubectl"
    kwok_label: str | None = None   # set: kwok plays only the Nodes carrying it (start_cluster(kwok="labelled"))

    @property
    def audit_log(self) -> Path:
        return self.workdir / "audit.log"

    # --- clients --------------------------------------------------------------------------------
    def kubectl(self, *args, kubeconfig=None, stdin=None, check=True, timeout=60) -> subprocess.CompletedProcess:
        """``kubectl --kubeconfig <admin or given> args``; with ``check`` a non-zero exit fails the test."""
        completed = subprocess.run(
            [self.kubectl_bin, "--kubeconfig", str(kubeconfig or self.admin_kubeconfig), "--cache-dir",
             str(self.workdir / "kubectl-cache"), *args],
            input=stdin, capture_output=True, text=True, timeout=timeout, check=False)
        if check and completed.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} exited {completed.returncode}:\n{completed.stderr}")
        return completed

    def get(self, *args, kubeconfig=None):
        """``kubectl get args -o json``, parsed."""
        return json.loads(self.kubectl("get", *args, "-o", "json", kubeconfig=kubeconfig).stdout)

    def apply_objects(self, *objects, verb="create", check=True) -> subprocess.CompletedProcess:
        """``kubectl create|apply -f -`` of API objects (dicts), validation on (kubectl's default)."""
        return self.kubectl(verb, "-f", "-", stdin=yaml.safe_dump_all(list(objects)), check=check)

    def namespace(self, name):
        """A namespace whose pods the ServiceAccount admission plugin accepts (its ``default`` ServiceAccount, which
        the controller-manager's serviceaccount controller would create)."""
        self.kubectl("create", "namespace", name)
        self.kubectl("create", "serviceaccount", "default", "-n", name)

    def token(self, namespace, service_account, duration="1h") -> str:
        """A bound ServiceAccount token from the TokenRequest API (``kubectl create token``)."""
        return self.kubectl("create", "token", service_account, "-n", namespace, "--duration", duration).stdout.strip()

    def token_kubeconfig(self, path, token, user="token-user") -> Path:
        """A kubeconfig for ``server`` that authenticates with ``token`` (verified against our CA)."""
        return write_kubeconfig(Path(path), self.server, self.ca_path, user=user, token=token)

    def auth_env(self, token=None) -> dict:
        """The ``K8S_AUTH_*`` variables the collection's modules, playbooks and inventory plugin read: the admin
        kubeconfig, or host + token + CA when ``token`` is given."""
        if token is None:
            return {"K8S_AUTH_KUBECONFIG": str(self.admin_kubeconfig)}
        return {"K8S_AUTH_HOST": self.server, "K8S_AUTH_API_KEY": token, "K8S_AUTH_CA_CERT": str(self.ca_path)}

    # --- etcd -----------------------------------------------------------------------------------
    def etcd(self, path, body):
        """POST ``body`` (JSON) to etcd's gRPC gateway (``/v3/kv/range``, ``/v3/kv/compaction``...) as the apiserver's
        etcd client; the answer, parsed."""
        context = ssl.create_default_context(cafile=str(self.ca_path))
        context.load_cert_chain(str(self.pki / "etcd-client.crt"), str(self.pki / "etcd-client.key"))
        request = urllib.request.Request(self.etcd_url + path, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, context=context, timeout=10) as answer:
            return json.load(answer)

    def compact_etcd(self) -> int:
        """Compact etcd's history up to its current revision, as the apiserver's own compactor does every 5 minutes
        (``k8s.io/apiserver/pkg/storage/etcd3/compact.go``): record the revision under ``compact_rev_key`` (a
        compare-and-swap on its version), then compact. The apiserver watches that key, and its watch cache drops the
        older history within ~15 s (``compactorPollPeriod``); continue tokens from before are then answered with 410.
        Returns the compacted revision."""
        key = base64.b64encode(b"compact_rev_key").decode()
        current = self.etcd("/v3/kv/range", {"key": key})
        revision = int(current["header"]["revision"])
        version = int((current.get("kvs") or [{}])[0].get("version", 0))
        swapped = self.etcd("/v3/kv/txn", {
            "compare": [{"key": key, "target": "VERSION", "result": "EQUAL", "version": str(version)}],
            "success": [{"requestPut": {"key": key, "value": base64.b64encode(str(revision).encode()).decode()}}]})
        if not swapped.get("succeeded"):
            raise AssertionError(f"compact_rev_key changed under us (another compactor?): {swapped}")
        self.etcd("/v3/kv/compaction", {"revision": str(revision), "physical": True})
        return revision

    # --- audit log ------------------------------------------------------------------------------
    def audit_events(self, user=None, resource=None):
        """The apiserver's audit events (``AUDIT_POLICY``), oldest first; only those of ``user`` (the user name, e.g.
        ``system:serviceaccount:gpu-checks:runtime-gate``) and on ``resource`` when given."""
        events = []
        if not self.audit_log.exists():
            return events
        for line in self.audit_log.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            if user and event.get("user", {}).get("username") != user:
                continue
            if resource and (event.get("objectRef") or {}).get("resource") != resource:
                continue
            events.append(event)
        return events

    # --- waiting --------------------------------------------------------------------------------
    def wait_for(self, what, probe, timeout=30, interval=0.2):
        """Poll ``probe()`` until it returns something truthy (returned) or ``timeout`` seconds pass (test fails)."""
        deadline = time.monotonic() + timeout
        last = None
        while True:
            last = probe()
            if last:
                return last
            if time.monotonic() > deadline:
                tails = "\n".join(f"--- {name} ---\n{component.log_tail(15)}"
                                  for name, component in self.components.items())
                raise AssertionError(f"{what}: not within {timeout} s (last: {last!r})\n{tails}")
            time.sleep(interval)

    def add_node(self, name, labels=None, allocatable=None, runtime_handlers=None, internal_ip="10.0.0.10",
                 unschedulable=False):
        """Register a Node as a kubelet would (status included), then wait until kwok reports it Ready.
        ``runtime_handlers``: names for status.runtimeHandlers (None: absent); ``unschedulable``: cordoned."""
        resources = dict(allocatable or {"cpu": "1", "memory": "4Gi", "pods": "110"})
        status = {"allocatable": resources, "capacity": dict(resources),
                  "addresses": [{"type": "InternalIP", "address": internal_ip}, {"type": "Hostname", "address": name}]}
        if runtime_handlers is not None:
            status["runtimeHandlers"] = [{"name": handler, "features": {"recursiveReadOnlyMounts": True,
                                                                        "userNamespaces": False}}
                                         for handler in runtime_handlers]
        self.apply_objects({"apiVersion": "v1", "kind": "Node",
                            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {}),
                                                                  **({self.kwok_label: "true"} if self.kwok_label else {})}},
                            "spec": {"unschedulable": True} if unschedulable else {}, "status": status})
        return self.wait_for(f"Node {name} Ready (kwok)", lambda: _ready(self.get("node", name)), NODE_READY_SECONDS)

    # --- lifecycle ------------------------------------------------------------------------------
    def stop(self):
        for name in reversed(list(self.components)):
            self.components[name].stop()


def _ready(node):
    conditions = (node.get("status") or {}).get("conditions") or []
    return node if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions) else None


def write_kubeconfig(path, server, ca_path, user, cert=None, key=None, token=None) -> Path:
    credentials = {"token": token} if token else {"client-certificate": str(cert), "client-key": str(key)}
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "gate",
              "clusters": [{"name": "gate", "cluster": {"server": server, "certificate-authority": str(ca_path)}}],
              "users": [{"name": user, "user": credentials}],
              "contexts": [{"name": "gate", "context": {"cluster": "gate", "user": user}}]}
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    path.chmod(0o600)
    return path


# --- certificates (openssl CLI) ---------------------------------------------------------------------
_EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
# name -> (subject, extensions)
_CERTIFICATES = {
    "serving": ("/CN=gate-loopback",
                "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
                "DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n"),
    # etcd's gRPC gateway (its JSON API: /v3/kv/range, /v3/kv/compaction) dials etcd itself with the serving
    # certificate, so etcd's must also be good for client authentication.
    "etcd-serving": ("/CN=gate-etcd", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n"),
    "etcd-client": ("/CN=kube-apiserver-etcd-client", "extendedKeyUsage=clientAuth\n"),
    "admin": ("/O=system:masters/CN=gate-admin", "extendedKeyUsage=clientAuth\n"),
    "scheduler": ("/CN=system:kube-scheduler", "extendedKeyUsage=clientAuth\n"),
    "kwok": ("/O=system:masters/CN=kwok-controller", "extendedKeyUsage=clientAuth\n"),
}


def make_pki(directory: Path):
    """CA, the certificates above (``<name>.crt``/``.key``) and the ServiceAccount key pair (``sa.key``/``sa.pub``)."""
    directory.mkdir(parents=True, exist_ok=True)

    def openssl(*args):
        completed = subprocess.run(["openssl", *args], cwd=directory, capture_output=True, text=True, check=False)
        if completed.returncode != 0:
            raise ClusterNotReady(f"openssl {' '.join(args)} failed: {completed.stderr}")

    openssl("req", "-x509", *_EC_KEY, "-keyout", "ca.key", "-out", "ca.crt", "-days", "3", "-subj", "/CN=gate-test-ca",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    for name, (subject, extensions) in _CERTIFICATES.items():
        (directory / f"{name}.ext").write_text(
            extensions + "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
            "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n", encoding="utf-8")
        openssl("req", "-new", *_EC_KEY, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject)
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", f"{name}.crt", "-days", "3", "-extfile", f"{name}.ext")
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "sa.key")
    openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub")


# --- start ------------------------------------------------------------------------------------------
def _spawn(name, argv, workdir, env=None) -> Component:
    log_path = workdir / f"{name}.log"
    # setpriv (util-linux) sets PR_SET_PDEATHSIG, then execs the component in its place: the kernel SIGKILLs it when
    # the test process dies, however it dies, so even a killed pytest leaves no component behind.
    with open(log_path, "wb") as log, open(os.devnull, "rb") as devnull:
        process = subprocess.Popen([SETPRIV, "--pdeathsig", "KILL", "--", *argv], stdin=devnull, stdout=log,
                                   stderr=subprocess.STDOUT, cwd=workdir, start_new_session=True, env=env)
    return Component(name, process, log_path)


def _https_ok(url, pki, client="admin", timeout=3):
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    if client:
        context.load_cert_chain(str(pki / f"{client}.crt"), str(pki / f"{client}.key"))
    try:
        with urllib.request.urlopen(url, context=context, timeout=timeout) as answer:
            return answer.status == 200
    except (urllib.error.URLError, OSError, ssl.SSLError):
        return False


def _http_ok(url, timeout=3):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            return answer.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _wait_healthy(component, probe, deadline):
    while not probe():
        if component.process.poll() is not None:
            raise ClusterNotReady(f"{component.name} exited {component.process.returncode} before it was ready:\n"
                                  f"{component.log_tail()}")
        if time.monotonic() > deadline:
            raise ClusterNotReady(f"{component.name} was not ready within {START_SECONDS} s of the cluster's start:\n"
                                  f"{component.log_tail()}")
        time.sleep(0.2)


def start_cluster(workdir: Path, kwok: bool | str = True) -> KubeCluster:
    """etcd, kube-apiserver, kube-scheduler and kwok on loopback; returns once each answers its health check.
    ``kwok=False``: no kwok, for real kubelets only (support/real_nodes.py), which kwok's --manage-all-nodes would fight;
    ``kwok="labelled"``: kwok plays only the Nodes ``add_node`` registers (label ``KWOK_LABEL``), real kubelets beside.

    Raises ``ClusterNotReady`` (with the failing component's log tail) after stopping what it started.
    """
    paths = binaries(COMPONENTS if kwok else COMPONENTS[:-1])
    kubectl_bin = require_command("kubectl", "kubernetes-client")
    require_command("openssl", "openssl")
    require_tool(os.access(SETPRIV, os.X_OK), f"{SETPRIV} is missing: apt-get install util-linux")
    workdir = Path(workdir)
    pki = workdir / "pki"
    make_pki(pki)
    etcd_port, etcd_peer_port, api_port, scheduler_port, kwok_port = (free_port() for _port in range(5))
    server = f"https://127.0.0.1:{api_port}"
    admin_kubeconfig = write_kubeconfig(workdir / "admin.kubeconfig", server, pki / "ca.crt", "gate-admin",
                                        pki / "admin.crt", pki / "admin.key")
    cluster = KubeCluster(workdir, server, pki / "ca.crt", admin_kubeconfig, f"https://127.0.0.1:{etcd_port}", pki,
                          kubectl_bin=kubectl_bin)
    # Nothing of the caller's environment that would point a component at another cluster or home directory.
    env = {key: value for key, value in os.environ.items() if key not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env["HOME"] = str(workdir)
    audit_policy = workdir / "audit-policy.yaml"
    audit_policy.write_text(yaml.safe_dump(AUDIT_POLICY), encoding="utf-8")
    deadline = time.monotonic() + START_SECONDS
    try:
        etcd = _spawn("etcd", [
            paths["etcd"], "--name=gate", f"--data-dir={workdir / 'etcd-data'}",
            f"--listen-client-urls=https://127.0.0.1:{etcd_port}", f"--advertise-client-urls=https://127.0.0.1:{etcd_port}",
            f"--listen-peer-urls=http://127.0.0.1:{etcd_peer_port}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer_port}",
            f"--initial-cluster=gate=http://127.0.0.1:{etcd_peer_port}",
            f"--cert-file={pki / 'etcd-serving.crt'}", f"--key-file={pki / 'etcd-serving.key'}",
            f"--trusted-ca-file={pki / 'ca.crt'}", "--client-cert-auth", "--unsafe-no-fsync", "--log-level=warn",
        ], workdir, env)
        cluster.components["etcd"] = etcd
        _wait_healthy(etcd, lambda: _https_ok(f"https://127.0.0.1:{etcd_port}/health", pki, "etcd-client"), deadline)

        apiserver = _spawn("kube-apiserver", [
            paths["kube-apiserver"], "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--secure-port={api_port}", f"--cert-dir={workdir / 'apiserver-certs'}",
            f"--etcd-servers=https://127.0.0.1:{etcd_port}", f"--etcd-cafile={pki / 'ca.crt'}",
            f"--etcd-certfile={pki / 'etcd-client.crt'}", f"--etcd-keyfile={pki / 'etcd-client.key'}",
            f"--tls-cert-file={pki / 'serving.crt'}", f"--tls-private-key-file={pki / 'serving.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            "--authorization-mode=Node,RBAC",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki / 'sa.pub'}", f"--service-account-signing-key-file={pki / 'sa.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            # The default plugins (RuntimeClass among them) but TaintNodesByCondition: see the module docstring.
            "--disable-admission-plugins=TaintNodesByCondition",
            f"--audit-policy-file={audit_policy}", f"--audit-log-path={cluster.audit_log}", "--audit-log-format=json",
            "--audit-log-mode=blocking",
            "--profiling=false", "--v=1",
        ], workdir, env)
        cluster.components["kube-apiserver"] = apiserver
        _wait_healthy(apiserver, lambda: _https_ok(f"{server}/readyz", pki), deadline)

        scheduler_kubeconfig = write_kubeconfig(workdir / "scheduler.kubeconfig", server, pki / "ca.crt",
                                                "system:kube-scheduler", pki / "scheduler.crt", pki / "scheduler.key")
        scheduler = _spawn("kube-scheduler", [
            paths["kube-scheduler"], f"--kubeconfig={scheduler_kubeconfig}",
            f"--authentication-kubeconfig={scheduler_kubeconfig}", f"--authorization-kubeconfig={scheduler_kubeconfig}",
            "--leader-elect=false", "--bind-address=127.0.0.1", f"--secure-port={scheduler_port}",
            f"--tls-cert-file={pki / 'serving.crt'}", f"--tls-private-key-file={pki / 'serving.key'}",
            "--profiling=false", "--v=2",
        ], workdir, env)
        cluster.components["kube-scheduler"] = scheduler
        _wait_healthy(scheduler, lambda: _https_ok(f"https://127.0.0.1:{scheduler_port}/readyz", pki, None), deadline)
        if not kwok:
            return cluster

        kwok_kubeconfig = write_kubeconfig(workdir / "kwok.kubeconfig", server, pki / "ca.crt", "kwok-controller",
                                           pki / "kwok.crt", pki / "kwok.key")
        managed = (["--manage-all-nodes=false", f"--manage-nodes-with-label-selector={KWOK_LABEL}=true"]
                   if kwok == "labelled" else ["--manage-all-nodes=true"])
        cluster.kwok_label = KWOK_LABEL if kwok == "labelled" else None
        kwok_process = _spawn("kwok", [
            paths["kwok"], f"--kubeconfig={kwok_kubeconfig}", *managed,
            f"--server-address=127.0.0.1:{kwok_port}",
        ], workdir, env)
        cluster.components["kwok"] = kwok_process
        _wait_healthy(kwok_process, lambda: _http_ok(f"http://127.0.0.1:{kwok_port}/healthz"), deadline)
    except BaseException:
        cluster.stop()
        raise
    return cluster
