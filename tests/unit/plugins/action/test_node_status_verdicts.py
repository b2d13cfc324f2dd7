"""node_status_verdicts' hosts as the run's --limit leaves them (ansible-core's own InventoryManager)."""
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader

from ansible_collections.gpufleet.runtime_gate.plugins.action.node_status_verdicts import hosts_in_limit


def inventory(limit=None):
    manager = InventoryManager(loader=DataLoader(), sources="gpu-1,gpu-2,gpu-3,")
    if limit:
        manager.subset(limit)  # what --limit does
    return manager


def test_the_limit_leaves_out_the_inventorys_hosts_outside_it():
    assert hosts_in_limit(["gpu-1", "gpu-2", "gpu-3"], inventory("gpu-1,gpu-3")) == ["gpu-1", "gpu-3"]
    assert hosts_in_limit(["gpu-3", "gpu-1"], inventory("all:!gpu-1")) == ["gpu-3"]


def test_without_a_limit_every_host_is_kept_in_its_order():
    assert hosts_in_limit(["gpu-3", "gpu-1", "gpu-2"], inventory()) == ["gpu-3", "gpu-1", "gpu-2"]


def test_the_plays_own_restriction_is_not_the_limit():
    # During the localhost play ansible-playbook restricts the inventory to that play's hosts; the hosts the next play
    # will judge are still the limit's.
    manager = inventory("gpu-2")
    manager.restrict_to_hosts([manager.get_host("gpu-1")])
    assert hosts_in_limit(["gpu-1", "gpu-2"], manager) == ["gpu-2"]


def test_a_name_the_inventory_does_not_hold_is_no_host_of_a_limit():
    assert hosts_in_limit(["gpu-2", "elsewhere"], inventory("gpu-1")) == ["elsewhere"]
