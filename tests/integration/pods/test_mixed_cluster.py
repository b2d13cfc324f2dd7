"""Real kubelets and kwok Nodes in one cluster: ``start_cluster(kwok="labelled")`` makes kwok play only the Nodes
``add_node`` registers (label ``KWOK_LABEL``), so a real node's status stays its kubelet's. About 20 s."""
import pytest
from support.containerd_daemons import releases
from support.kube_cluster import KWOK_LABEL, ClusterNotReady, start_cluster
from support.real_nodes import cri_base, remove_real_node, start_real_node


def test_kwok_nodes_beside_a_real_node(tmp_path):
    release = next(release for release in releases() if release.name == "2.4")
    root = tmp_path / "node"
    (root / "etc" / "containerd").mkdir(parents=True)
    (root / "etc" / "containerd" / "config.toml").write_text("version = 2\n" + cri_base(release), encoding="utf-8")
    try:
        cluster = start_cluster(tmp_path / "cluster", kwok="labelled")
    except ClusterNotReady as err:
        pytest.fail(f"the test cluster did not start: {err}", pytrace=False)
    node = None
    try:
        node = start_real_node(cluster, "real-0", release, root)
        fake = cluster.add_node("fake-0", runtime_handlers=["runc", "nvidia"])
        assert fake["metadata"]["labels"][KWOK_LABEL] == "true"

        def real_ready():
            status = cluster.get("node", "real-0")["status"]
            ready = any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or ())
            return status if ready else None
        status = cluster.wait_for("real-0 Ready (its own kubelet)", real_ready, 90)
        # The real kubelet's own report, untouched by kwok: its version, and the handlers containerd 2.4 serves.
        assert status["nodeInfo"]["kubeletVersion"] == "v1.34.4"
        assert status["nodeInfo"]["containerRuntimeVersion"] == f"containerd://{release.version}"
        assert sorted(entry["name"] for entry in status["runtimeHandlers"]) == ["", "runc"]
        assert KWOK_LABEL not in cluster.get("node", "real-0")["metadata"]["labels"]
    finally:
        if node is not None:
            remove_real_node(node)
        cluster.stop()
    assert node is None or not node.leftovers()
