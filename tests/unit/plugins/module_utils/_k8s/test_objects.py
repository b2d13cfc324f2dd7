"""Names where cluster data enters (``_k8s/objects.py``): a Node's ``status.runtimeHandlers`` names follow the rule of
the RuntimeClass handler they are matched against (issue 22 item 5: the API server does not check them)."""
import pytest

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.objects import normalise_cluster_objects

SOURCE = "the API server https://x"


def node_with_handlers(*names):
    return {"metadata": {"name": "gpu-1"}, "status": {"runtimeHandlers": [{"name": name} for name in names]}}


def test_handler_names_that_are_labels_and_the_default_are_kept():
    nodes = normalise_cluster_objects([], [node_with_handlers("", "nvidia", "kata-qemu")], SOURCE)["nodes"]
    assert [handler["name"] for handler in nodes[0]["runtime_handlers"]] == ["", "nvidia", "kata-qemu"]


@pytest.mark.parametrize("name", ["x\nOK", "Nvidia", "kata_qemu", "-runc", "a" * 64, "nvidia.gpu", "\x1b[32mOK"])
def test_a_handler_name_that_no_runtimeclass_can_name_is_refused_naming_node_field_and_rule(name):
    with pytest.raises(RuntimeGateError) as raised:
        normalise_cluster_objects([], [node_with_handlers("", name)], SOURCE)
    message = str(raised.value)
    assert message.startswith(f"{SOURCE}: Node 'gpu-1': status.runtimeHandlers name "), message
    assert "is not a DNS-1123 label (lowercase letters, digits and '-', at most 63 characters)" in message
    assert "\n" not in message and "\x1b" not in message
