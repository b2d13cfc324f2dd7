"""docs/rbac.yaml on the real apiserver (``--authorization-mode=Node,RBAC``, bound ServiceAccount tokens).

The stand-in stores RBAC objects and enforces nothing; here the server decides. Applied with kubectl's validation on,
the read-only ServiceAccount's token runs what crosscheck and nightly need (runtimeclass_info with nodes and pods, the
k8s_nodes inventory, both playbooks) and gets 403 from runtimeclass_apply; the rollout account's token applies. The
audit log records every request of both accounts, so "what the modules ask for" is the server's record, and each
rule of the reader role is shown to be needed by taking it away.
"""
import json
import subprocess

import pytest
import yaml
from kube_runs import VENV_BIN, ansible_env, assert_one_clear_failure, run_crosscheck, run_module

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.errors import KubeAccessError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.lists import list_cluster_objects

from support.paths import REPO_ROOT

from .lab_plan import NODES

RBAC = REPO_ROOT / "docs" / "rbac.yaml"
NAMESPACE = "gpu-checks"
READER = f"system:serviceaccount:{NAMESPACE}:runtime-gate"
ROLLOUT = f"system:serviceaccount:{NAMESPACE}:runtime-gate-rollout"
INFO = "gpufleet.runtime_gate.runtimeclass_info"
APPLY = "gpufleet.runtime_gate.runtimeclass_apply"
# What crosscheck's runtimeclass_info (nodes: true, pods: true) lists, in this order.
READ_LISTS = {("list", "runtimeclasses"), ("list", "nodes"), ("list", "pods"), ("list", "events")}


@pytest.fixture(scope="module")
def rbac(kube_cluster, lab, tmp_path_factory):
    """docs/rbac.yaml applied twice (validation strict), and a token + kubeconfig for each ServiceAccount."""
    del lab  # the Nodes and pods the accounts read
    applied = kube_cluster.kubectl("apply", "--validate=strict", "-f", str(RBAC)).stdout
    again = kube_cluster.kubectl("apply", "--validate=strict", "-f", str(RBAC)).stdout
    directory = tmp_path_factory.mktemp("rbac")
    tokens = {name: kube_cluster.token(NAMESPACE, name)
              for name in ("runtime-gate", "runtime-gate-rollout", "runtime-gate-labeller")}
    kubeconfigs = {name: kube_cluster.token_kubeconfig(directory / f"{name}.kubeconfig", token, name)
                   for name, token in tokens.items()}
    return {"applied": applied, "again": again, "tokens": tokens, "kubeconfigs": kubeconfigs}


def audit_mark(kube_cluster):
    return len(kube_cluster.audit_events())


def requests_since(kube_cluster, mark, user):
    """(verb, resource, HTTP code) of ``user``'s requests after ``mark``, as the apiserver's audit log has them."""
    events = kube_cluster.audit_events()[mark:]
    return [(event["verb"], (event.get("objectRef") or {}).get("resource"), event["responseStatus"]["code"])
            for event in events if event["user"]["username"] == user]


def can_i(kube_cluster, kubeconfig, verb, resource):
    answer = kube_cluster.kubectl("auth", "can-i", verb, resource, kubeconfig=kubeconfig, check=False)
    return answer.stdout.strip()


def rbac_objects():
    return [document for document in yaml.safe_load_all(RBAC.read_text()) if document]


def granted_by_the_file():
    """``{(account, verb, resource)}`` the ClusterRoles and bindings of docs/rbac.yaml grant, read from the file."""
    roles = {role["metadata"]["name"]: role["rules"] for role in rbac_objects() if role["kind"] == "ClusterRole"}
    granted = set()
    for binding in (document for document in rbac_objects() if document["kind"] == "ClusterRoleBinding"):
        for subject in binding["subjects"]:
            for rule in roles[binding["roleRef"]["name"]]:
                for group in rule["apiGroups"]:
                    for resource in rule["resources"]:
                        granted.update((subject["name"], verb, f"{resource}.{group}" if group else resource)
                                       for verb in rule["verbs"])
    return granted


# What no account may ever do, whatever the file says (docs/security.md: read Secrets, delete anything; the reader
# writes nothing; only the labeller patches Nodes; nobody replaces a whole Node).
NEVER = [(account, "list", "secrets") for account in ("runtime-gate", "runtime-gate-rollout", "runtime-gate-labeller")] + [
    (account, "delete", resource) for account in ("runtime-gate", "runtime-gate-rollout", "runtime-gate-labeller")
    for resource in ("runtimeclasses.node.k8s.io", "nodes")] + [
    ("runtime-gate", verb, resource) for verb in ("create", "update", "patch")
    for resource in ("runtimeclasses.node.k8s.io", "nodes")] + [
    ("runtime-gate-rollout", "patch", "nodes"), ("runtime-gate-rollout", "update", "nodes"),
    ("runtime-gate-labeller", "update", "nodes"), ("runtime-gate-labeller", "create", "runtimeclasses.node.k8s.io"),
]


def test_rbac_yaml_applies_with_validation_and_the_server_grants_what_it_says(kube_cluster, rbac):
    # Every object of the file was created, and a second apply changed none of them.
    objects = {(document["kind"].lower(), document["metadata"]["name"]) for document in rbac_objects()}
    created = {tuple(line.split(" ")[0].split("/", 1)) for line in rbac["applied"].splitlines() if line.endswith(" created")}
    assert {(kind.split(".")[0], name) for kind, name in created} == objects, rbac["applied"]
    assert rbac["again"].count(" unchanged") == len(objects), rbac["again"]
    kubeconfigs = rbac["kubeconfigs"]
    # The server grants each account every verb its bound roles list ...
    granted = granted_by_the_file()
    assert {key: can_i(kube_cluster, kubeconfigs[key[0]], *key[1:]) for key in granted} == dict.fromkeys(granted, "yes")
    # ... and none of what no account may do (a rule widened in the file fails here, not only in review).
    assert {key: can_i(kube_cluster, kubeconfigs[key[0]], *key[1:]) for key in NEVER} == dict.fromkeys(NEVER, "no")
    # Events: list only (runtimeclass_info's field-selected list), never get.
    assert can_i(kube_cluster, kubeconfigs["runtime-gate"], "get", "events") == "no"


def test_the_read_only_token_runs_crosscheck_and_nightly(kube_cluster, lab_crosscheck, rbac, tmp_path):
    token = rbac["tokens"]["runtime-gate"]
    env = kube_cluster.auth_env(token)
    mark = audit_mark(kube_cluster)
    run = run_crosscheck(tmp_path, list(NODES), env)
    assert run.returncode == 2 and "CLUSTER_NOT_READ" not in run.output, run.output  # gpu-node-07 MISSING, as admin
    outcome = {host: (verdict["status"], verdict["missing_handlers"]) for host, verdict in run.verdicts.items()}
    assert outcome == {host: (verdict["status"], verdict["missing_handlers"])
                       for host, verdict in lab_crosscheck.verdicts.items()}
    assert set(outcome) == set(NODES)
    report, admin_report = run.written["report/report.json"], lab_crosscheck.written["report/report.json"]
    assert '"POD_DOES_NOT_FIT_WITH_OVERHEAD"' in report
    assert _overhead(report) == _overhead(admin_report)
    assert token not in run.output and all(token not in text for text in run.written.values())

    nightly = subprocess.run(
        [str(VENV_BIN / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"), str(REPO_ROOT / "playbooks" / "nightly.yml"),
         "-e", f"runtime_gate_report_dir={tmp_path / 'nightly'}"],
        cwd=REPO_ROOT, env=ansible_env(ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default", **env),
        capture_output=True, text=True, timeout=300, check=False)
    assert nightly.returncode == 2, nightly.stdout + nightly.stderr
    nightly_report = (tmp_path / "nightly" / "report.json").read_text()
    assert _overhead(nightly_report) == _overhead(admin_report) and token not in nightly.stdout + nightly.stderr
    assert {"junit.xml", "report.html"} <= {path.name for path in (tmp_path / "nightly").iterdir()}

    # Two runs, each exactly the four lists, all answered 200: nothing else was asked of the server.
    used = requests_since(kube_cluster, mark, READER)
    assert {(verb, resource) for verb, resource, _code in used} == READ_LISTS and len(used) == 2 * len(READ_LISTS)
    assert {code for _verb, _resource, code in used} == {200}


def _overhead(report_text):
    return sorted((finding["code"], finding["host"], finding["evidence"].get("pod"))
                  for finding in json.loads(report_text)["overhead_findings"])


def test_the_read_only_token_builds_the_k8s_nodes_inventory(kube_cluster, rbac, ansible_inventory):
    mark = audit_mark(kube_cluster)
    returncode, listed, stderr = ansible_inventory({"plugin": "gpufleet.runtime_gate.k8s_nodes"},
                                                   kube_cluster.auth_env(rbac["tokens"]["runtime-gate"]))
    assert returncode == 0, stderr
    assert sorted(listed["gpu_nodes"]["hosts"]) == sorted(NODES)
    assert requests_since(kube_cluster, mark, READER) == [("list", "nodes", 200)]


def reader_view(kube_cluster, token):
    """runtimeclass_info with nodes and pods, as ``token``: what a rollout reads before it applies."""
    run = run_module(INFO, {"nodes": True, "pods": True}, env=ansible_env(**kube_cluster.auth_env(token)))
    assert run.returncode == 0 and token not in run.output, run.output
    return run.result


GATED = {"name": "nvidia-cdi-gated", "handler": "nvidia-cdi", "node_selector": {"gpufleet.example/pool": "canary"}}


def test_the_read_only_token_gets_403_from_runtimeclass_apply(kube_cluster, lab_crosscheck, rbac):
    token = rbac["tokens"]["runtime-gate"]
    mark = audit_mark(kube_cluster)
    run = run_module(APPLY, {"runtimeclasses": [GATED], "verdicts": list(lab_crosscheck.verdicts.values())},
                     env=ansible_env(**kube_cluster.auth_env(token)))
    assert_one_clear_failure(run, f"creating RuntimeClass 'nvidia-cdi-gated' on {kube_cluster.server} failed: HTTP 403",
                             "docs/rbac.yaml", secrets=(token,))
    # runtimeclass_apply lists the Nodes itself (issue 22 item 3), then the classes, then writes.
    assert requests_since(kube_cluster, mark, READER) == [
        ("list", "nodes", 200), ("list", "runtimeclasses", 200), ("create", "runtimeclasses", 403)]
    assert kube_cluster.kubectl("get", "runtimeclass", GATED["name"], check=False).returncode != 0
    # Nor can it change a class by hand.
    refused = kube_cluster.kubectl("label", "runtimeclass", "nvidia", "team=ml",
                                   kubeconfig=rbac["kubeconfigs"]["runtime-gate"], check=False)
    assert refused.returncode != 0 and "forbidden" in refused.stderr, refused.stderr


def test_the_rollout_token_creates_and_updates_with_runtimeclass_apply(kube_cluster, lab_crosscheck, rbac):
    token = rbac["tokens"]["runtime-gate-rollout"]
    env = ansible_env(**kube_cluster.auth_env(token))
    args = {"runtimeclasses": [GATED], "verdicts": list(lab_crosscheck.verdicts.values())}
    mark = audit_mark(kube_cluster)
    created = run_module(APPLY, args, env=env)
    assert created.returncode == 0 and created.result["runtimeclasses"][0]["action"] == "create", created.output
    updated = run_module(APPLY, dict(args, runtimeclasses=[dict(GATED, overhead_pod_fixed={"cpu": "50m"})]), env=env)
    assert updated.returncode == 0 and updated.result["runtimeclasses"][0]["action"] == "update", updated.output
    assert token not in created.output + updated.output
    writes = [(verb, code) for verb, resource, code in requests_since(kube_cluster, mark, ROLLOUT) if verb != "list"]
    assert writes == [("create", 201), ("update", 200)]
    live = kube_cluster.get("runtimeclass", GATED["name"])
    assert (live["handler"], live["overhead"]) == ("nvidia-cdi", {"podFixed": {"cpu": "50m"}})
    # patch is granted for `kubectl apply`/`label` by hand; delete is not (removing a class is a human decision).
    kube_cluster.kubectl("label", "runtimeclass", GATED["name"], "team=ml",
                         kubeconfig=rbac["kubeconfigs"]["runtime-gate-rollout"])
    deleted = kube_cluster.kubectl("delete", "runtimeclass", GATED["name"],
                                   kubeconfig=rbac["kubeconfigs"]["runtime-gate-rollout"], check=False)
    assert deleted.returncode != 0 and "forbidden" in deleted.stderr, deleted.stderr


def test_every_rule_of_the_reader_role_is_needed(kube_cluster, rbac):
    """Each rule taken away in turn (a copy of the role without it, bound to a fresh account): what crosscheck reads
    (runtimeclass_info with nodes and pods, through the modules' own client) fails with 403 on exactly that resource."""
    rules = kube_cluster.get("clusterrole", "gpufleet-runtime-gate-reader")["rules"]
    assert sorted(resource for rule in rules for resource in rule["resources"]) == sorted(
        resource for _verb, resource in READ_LISTS)
    full = list_cluster_objects({"host": kube_cluster.server, "api_key": rbac["tokens"]["runtime-gate"],
                                 "ca_cert": str(kube_cluster.ca_path)}, include_nodes=True, include_pods=True)
    assert sorted(node["name"] for node in full["nodes"]) == sorted(NODES) and full["pods"]
    for index, rule in enumerate(rules):
        (resource,) = rule["resources"]
        name = f"gate-without-{resource}"
        kube_cluster.kubectl("create", "serviceaccount", name, "-n", NAMESPACE)
        kube_cluster.apply_objects(
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
             "rules": rules[:index] + rules[index + 1:]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
             "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}]})
        other = next(r["resources"][0] for r in rules if r is not rule)
        kube_cluster.wait_for(f"the binding of {name} in force", lambda name=name, other=other: kube_cluster.kubectl(
            "auth", "can-i", "list", other, f"--as=system:serviceaccount:{NAMESPACE}:{name}", check=False).returncode == 0)
        options = {"host": kube_cluster.server, "api_key": kube_cluster.token(NAMESPACE, name),
                   "ca_cert": str(kube_cluster.ca_path)}
        with pytest.raises(KubeAccessError) as refused:
            list_cluster_objects(options, include_nodes=True, include_pods=True)
        assert refused.value.http_status == 403, str(refused.value)
        assert f'cannot list resource "{resource}"' in str(refused.value), str(refused.value)
