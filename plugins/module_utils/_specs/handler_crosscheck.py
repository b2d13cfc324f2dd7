# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The argument spec of handler_crosscheck (an action plugin: the spec is all there is to its options)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def cluster_options():
    """Where the judgement finds the cluster: shared by handler_crosscheck and node_crosscheck."""
    return dict(
        runtimeclasses=dict(type="list", elements="dict"),
        cluster_result=dict(type="dict"),
        cluster_result_var=dict(type="str"),
        nodes=dict(type="list", elements="dict"),
        node_name=dict(type="str", required=True),
        node_labels=dict(type="dict"),
        fail_on_verdict=dict(type="bool", default=True),
    )


def get_handler_crosscheck_argument_spec():
    argument_spec = dict(facts=dict(type="dict"), gather_result=dict(type="dict"), **cluster_options())
    return {
        "argument_spec": argument_spec,
        "supports_check_mode": True,
        "mutually_exclusive": [("facts", "gather_result"), ("runtimeclasses", "cluster_result", "cluster_result_var")],
    }
