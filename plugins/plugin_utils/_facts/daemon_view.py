"""What the *running* containerd has loaded, from its CRI status (controller side, pure).

Input is the ``daemon`` evidence of ``containerd_facts``: the stdout of ``crictl info`` or the
``StatusResponse`` the node's gRPC client decoded (``_node/cri_status``). Both become the object crictl
prints (crictl merges the ``info`` map's JSON values into one object next to ``status``,
``runtimeHandlers`` and ``features``: cri-tools ``cmd/crictl/util.go`` ``outputStatusData``), then the view::

    {"state": "serving" | "cri_unavailable" | "unknown", "reason": str | None,
     "source": "crictl" | "grpc" | None, "socket": str | None,
     "runtimes": [names] | None, "runtime_details": {name: {"runtime_type", "binary_name", "options"}} | None,
     "default_runtime": str | None, "runtime_handlers": [names] | None, "cri_ready": bool | None,
     "conditions": [{"type", "status", "reason", "message"}], "cri_plugin_errors": [str]}

``cri_unavailable``: the daemon answered on its socket but no CRI ``RuntimeService`` is registered (gRPC
``Unimplemented``: "unknown service runtime.v1.RuntimeService"), which is how a CRI plugin that failed
to load looks (``failed to load plugin io.containerd.grpc.v1.cri``; docs/containerd-loading.md §2, verified on 1.6.20):
the node serves no handler, so ``runtimes`` is ``[]``. ``unknown`` (no client on the node, no socket,
any other error) leaves ``runtimes`` None: never assumed equal to the dump.

Shapes (docs/containerd-loading.md §6; tested on real daemons of every release in tests/unit/plugins/plugin_utils/_facts/test_daemon_view.py):
``config.containerd.runtimes.<name>.runtimeType`` / ``.options.BinaryName`` and
``config.containerd.defaultRuntimeName`` on 1.x and 2.x; ``runtimeHandlers`` only on 2.x (a list, the
default handler repeated as an entry without a name, order not guaranteed before 2.1.4) — so
``runtime_handlers`` is None on 1.x and the sorted named handlers on 2.x.
"""

import json
import re

SERVING = "serving"
CRI_UNAVAILABLE = "cri_unavailable"
UNKNOWN = "unknown"

# crictl prints gRPC errors as "rpc error: code = Unimplemented desc = unknown service ...".
_CRICTL_GRPC_CODE = re.compile(r"code = (\w+)")


def daemon_view(evidence):
    """The daemon's view from the node's raw ``daemon`` evidence (never raises)."""
    if not isinstance(evidence, dict):
        return _unknown("the node module returned no daemon evidence", None, None)
    source, socket = evidence.get("source"), evidence.get("socket")
    if source == "crictl":
        return _from_crictl(evidence, socket)
    if source == "grpc":
        return _from_grpc(evidence, socket)
    return _unknown(evidence.get("error") or "the daemon was not asked", source, socket)


def _from_crictl(evidence, socket):
    if evidence.get("error"):
        return _unknown(evidence["error"], "crictl", socket)
    stderr = (evidence.get("stderr") or "").strip()
    if evidence.get("rc") != 0:
        command = " ".join(evidence.get("command") or ["crictl", "info"])
        codes = _CRICTL_GRPC_CODE.findall(stderr)
        if "Unimplemented" in codes:
            return _cri_unavailable(f"`{command}` failed: {stderr}", "crictl", socket, [])
        return _unknown(f"`{command}` exited {evidence.get('rc')}: {stderr or '(no stderr)'}", "crictl", socket)
    try:
        info = json.loads(evidence.get("stdout") or "")
    except ValueError as error:
        return _unknown(f"crictl info printed no JSON: {error}", "crictl", socket)
    return view_from_crictl_info(info, source="crictl", socket=socket)


def _from_grpc(evidence, socket):
    if evidence.get("grpc_code") == "UNIMPLEMENTED":
        plugins = ((evidence.get("cri_plugins") or {}).get("plugins")) or []
        errors = [f"{plugin.get('type')}.{plugin.get('id')}: {plugin['init_error']}"
                  for plugin in plugins if isinstance(plugin, dict) and plugin.get("init_error")]
        return _cri_unavailable(evidence.get("error") or "RuntimeService is not served", "grpc", socket, errors)
    response = evidence.get("response")
    if evidence.get("error") or not isinstance(response, dict):
        return _unknown(evidence.get("error") or "the gRPC client returned no response", "grpc", socket)
    return view_from_crictl_info(crictl_info_from_status(response), source="grpc", socket=socket)


def crictl_info_from_status(response):
    """A decoded ``StatusResponse`` → the object ``crictl info`` prints for it.

    crictl decodes each ``info`` value as JSON when it can and keeps the raw string otherwise.
    """
    info = {}
    for key, value in (response.get("info") or {}).items():
        try:
            info[key] = json.loads(value)
        except (TypeError, ValueError):
            info[key] = value
    for key in ("status", "runtimeHandlers", "features"):
        if key in response:
            info[key] = response[key]
    return info


def view_from_crictl_info(info, *, source, socket):
    """The view of one ``crictl info`` object (1.x or 2.x shape)."""
    if not isinstance(info, dict):
        return _unknown("the CRI status is not a JSON object", source, socket)
    config = info.get("config")
    containerd = config.get("containerd") if isinstance(config, dict) else None
    if not isinstance(containerd, dict):
        # Status without verbose, or a CRI implementation other than containerd's.
        return _unknown("the CRI status carries no config.containerd (not containerd, or not verbose)", source, socket)
    runtimes = containerd.get("runtimes") or {}
    if not isinstance(runtimes, dict):
        return _unknown("config.containerd.runtimes in the CRI status is not an object", source, socket)
    default_runtime = containerd.get("defaultRuntimeName")
    conditions = _conditions(info.get("status"))
    ready = [condition["status"] for condition in conditions if condition["type"] == "RuntimeReady"]
    view = _empty(SERVING, None, source, socket)
    view.update(
        runtimes=sorted(runtimes),
        runtime_details={name: _runtime_details(runtime) for name, runtime in sorted(runtimes.items())},
        default_runtime=default_runtime if isinstance(default_runtime, str) and default_runtime else None,
        runtime_handlers=_handler_names(info.get("runtimeHandlers")),
        cri_ready=ready[0] if ready else None,
        conditions=conditions,
    )
    return view


def _runtime_details(runtime):
    runtime = runtime if isinstance(runtime, dict) else {}
    # 1.7 prints "options": null for a runtime without options.
    options = runtime.get("options") if isinstance(runtime.get("options"), dict) else {}
    runtime_type, binary_name = runtime.get("runtimeType"), options.get("BinaryName")
    return {"runtime_type": runtime_type if isinstance(runtime_type, str) and runtime_type else None,
            "binary_name": binary_name if isinstance(binary_name, str) and binary_name else None,
            "options": options}


def _handler_names(handlers):
    if not isinstance(handlers, list):
        return None  # 1.x, or crictl older than 1.30: not reported, which is not "none"
    names = {handler.get("name") for handler in handlers if isinstance(handler, dict)}
    return sorted(name for name in names if isinstance(name, str) and name)


def _conditions(status):
    conditions = status.get("conditions") if isinstance(status, dict) else None
    return [{"type": str(condition.get("type", "")), "status": condition.get("status") is True,
             "reason": str(condition.get("reason") or ""), "message": str(condition.get("message") or "")}
            for condition in conditions or () if isinstance(condition, dict)]


def _empty(state, reason, source, socket):
    return {"state": state, "reason": reason, "source": source, "socket": socket, "runtimes": None,
            "runtime_details": None, "default_runtime": None, "runtime_handlers": None, "cri_ready": None,
            "conditions": [], "cri_plugin_errors": []}


def _unknown(reason, source, socket):
    return _empty(UNKNOWN, reason, source, socket)


def _cri_unavailable(reason, source, socket, plugin_errors):
    view = _empty(CRI_UNAVAILABLE, reason, source, socket)
    view.update(runtimes=[], runtime_details={}, cri_ready=False, cri_plugin_errors=plugin_errors)
    if plugin_errors:
        view["reason"] = f"{reason}; CRI plugin failed to load: {'; '.join(plugin_errors)}"
    return view
