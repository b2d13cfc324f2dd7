"""What the cluster requires of one node: the handlers its pods can ask containerd for.

Pure functions over the normalised RuntimeClasses and Nodes of ``_cluster_objects``.

* A RuntimeClass whose ``scheduling.nodeSelector`` matches the node's labels can place pods there;
  one without a nodeSelector can place pods on *every* node (``scheduling: nil`` means "supported by
  all nodes", node/v1 types.go — the GPU Operator ships its classes that way).
* Pods without ``runtimeClassName`` use the runtime's default handler, so the node's own
  ``default_runtime_name`` is always required.
* Labels that are unknown cannot rule a class out: its handler is required, and that is said (fail
  closed, never a silent pass).
"""


def labels_of_node(nodes, node_name):
    """The labels of the Node called ``node_name`` in ``nodes``, or None when it is not there."""
    for node in nodes or ():
        if node.get("name") == node_name:
            return dict(node.get("labels") or {})
    return None


def selector_matches(node_selector, node_labels):
    """Kubernetes nodeSelector semantics: every key present with exactly that value."""
    return all(node_labels.get(key) == value for key, value in node_selector.items())


EXPECTED_REASON = "expected_handlers (the task's own list)"


def required_handlers(runtimeclasses, node_labels, default_runtime_name, expected_handlers=()):
    """Map each required handler to the reasons it is required, in a stable order.

    ``node_labels`` None means unknown: every class counts. ``expected_handlers``: handlers the caller requires
    besides the RuntimeClasses' (the role's own runtimes after a restart). Returns ``(requirements, notes)`` where
    ``requirements`` is ``{handler: [reason, ...]}`` and ``notes`` lists what the caller should say.
    """
    requirements = {}
    notes = []
    unknown_label_classes = []
    for runtimeclass in sorted(runtimeclasses, key=lambda item: item["name"]):
        node_selector = runtimeclass.get("node_selector")
        if node_selector:
            if node_labels is None:
                unknown_label_classes.append(runtimeclass["name"])
            elif not selector_matches(node_selector, node_labels):
                continue
            reason = f"RuntimeClass {runtimeclass['name']}"
        else:
            reason = f"RuntimeClass {runtimeclass['name']} (no nodeSelector: every node)"
        requirements.setdefault(runtimeclass["handler"], []).append(reason)
    for handler in expected_handlers or ():
        requirements.setdefault(handler, []).append(EXPECTED_REASON)
    if default_runtime_name:
        requirements.setdefault(default_runtime_name, []).append("default_runtime_name (pods without runtimeClassName)")
    if unknown_label_classes:
        notes.append(
            "node labels unknown: counted as required the nodeSelector-scoped RuntimeClass(es) "
            + ", ".join(unknown_label_classes)
        )
    return dict(sorted(requirements.items())), notes
