# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The running containerd's CRI status, as raw evidence: ``crictl info`` or one gRPC call.

Runs on nodes: standard library only (``grpc`` is imported only if the node has it), Python 3.8 syntax.

``config dump`` re-reads the files; it never talks to the daemon (docs/containerd-loading.md §7, containerd #9417). The
daemon's own view is CRI ``RuntimeService/Status`` with ``verbose: true``: its ``info`` map holds the CRI
plugin's in-memory config as JSON (docs/containerd-loading.md §6). In order of preference:

1. ``crictl --runtime-endpoint unix://SOCKET info`` when crictl is installed (argv list, no shell);
2. a generic unary gRPC call through ``grpcio`` if the node's Python can import it, with the protobuf
   messages encoded and decoded here by hand (no generated code, no ``protobuf`` package);
3. otherwise nothing: ``{"source": None, "error": ...}`` and the controller states the view is unknown.

Nothing here interprets the answer; ``_facts/daemon_view`` on the controller does.
"""

from __future__ import absolute_import, division, print_function

import os
import time

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.gather import deadline_in, find_executable, run_command

__metaclass__ = type

STATUS_METHOD = "/runtime.v1.RuntimeService/Status"
# containerd's own API on the same socket: which plugins loaded, and the CRI plugin's init error
# when it failed (what `ctr plugins ls -d` prints).
PLUGINS_METHOD = "/containerd.services.introspection.v1.Introspection/Plugins"
MAX_OUTPUT_BYTES = 8 * 1024 * 1024
NO_CLIENT = "neither crictl nor grpcio on the node"

# Field numbers from k8s.io/cri-api pkg/apis/runtime/v1/api.proto.
_RUNTIME_HANDLER_FEATURES = {1: "recursive_read_only_mounts", 2: "user_namespaces"}
_RUNTIME_FEATURES = {1: "supplemental_groups_policy", 2: "user_namespaces_host_network"}


def daemon_status(socket, crictl_bin, timeout, deadline=None):
    """Raw evidence of the daemon's CRI status over ``socket`` (a path).

    Bounded by ``deadline`` (the node task's, shared with the dump; None: ``timeout`` seconds from now): crictl's own
    ``--timeout`` and the gRPC call get what is left of it, and the process is killed at it."""
    deadline = deadline if deadline is not None else deadline_in(timeout)
    evidence = {"socket": socket, "socket_exists": os.path.exists(socket)}
    if not evidence["socket_exists"]:
        evidence.update({"source": None, "error": "the socket %s does not exist (containerd not running, or it listens elsewhere)"
                                                  % socket})
        return evidence
    left = deadline - time.monotonic()
    if left <= 0:
        evidence.update({"source": None, "error": "not asked: the node task's %d seconds (timeout) ran out before the "
                                                  "daemon could be asked" % timeout})
        return evidence
    crictl = find_executable(crictl_bin) if crictl_bin else None
    if crictl:
        evidence.update(_crictl_info(crictl, socket, timeout, deadline))
        return evidence
    try:
        import grpc
    except ImportError:
        evidence.update({"source": None, "error": NO_CLIENT})
        return evidence
    evidence.update(_grpc_status(grpc, socket, left))
    return evidence


def _crictl_info(crictl, socket, timeout, deadline):
    # crictl's own --timeout (per connection) within what is left, so its own message comes first when it can.
    argv = [crictl, "--runtime-endpoint", "unix://" + socket, "--timeout", "%ds" % max(1, int(deadline - time.monotonic())),
            "info"]
    result = {"source": "crictl", "command": argv, "rc": None, "stdout": None, "stderr": None, "error": None}
    rc, stdout, stderr, error = run_command(argv, timeout, max_bytes=MAX_OUTPUT_BYTES, deadline=deadline)
    if error:
        result["error"] = error
        return result
    result["rc"] = rc
    result["stderr"] = stderr
    result["stdout"] = stdout.decode("utf-8", "replace")
    return result


def _grpc_status(grpc, socket, timeout):
    result = {"source": "grpc", "method": STATUS_METHOD, "response": None, "grpc_code": None,
              "grpc_details": None, "error": None, "cri_plugins": None}
    # Proxies never apply to a unix socket; keep http_proxy in the environment from rerouting it.
    channel = grpc.insecure_channel("unix:" + socket, options=[("grpc.enable_http_proxy", 0)])
    try:
        # No serializers: the request and the response are the protobuf bytes themselves.
        raw = channel.unary_unary(STATUS_METHOD)(encode_status_request(verbose=True), timeout=timeout)
        result["response"] = decode_status_response(raw)
    except grpc.RpcError as error:
        result["grpc_code"] = error.code().name if error.code() else None
        result["grpc_details"] = error.details()
        result["error"] = "%s over unix:%s failed: %s: %s" % (STATUS_METHOD, socket, result["grpc_code"], error.details())
        if result["grpc_code"] == "UNIMPLEMENTED":
            result["cri_plugins"] = _cri_plugins(grpc, channel, timeout)
    except ValueError as error:
        result["error"] = "the answer of %s over unix:%s is not a StatusResponse: %s" % (STATUS_METHOD, socket, error)
    finally:
        channel.close()
    return result


def _cri_plugins(grpc, channel, timeout):
    """containerd's CRI plugins with their init errors, or an error sentence; only asked when CRI is down."""
    try:
        raw = channel.unary_unary(PLUGINS_METHOD)(b"", timeout=timeout)
        plugins = decode_plugins_response(raw)
    except grpc.RpcError as error:
        return {"error": "%s failed: %s" % (PLUGINS_METHOD, error.details())}
    except ValueError as error:
        return {"error": "the answer of %s is not a PluginsResponse: %s" % (PLUGINS_METHOD, error)}
    # 1.x: io.containerd.grpc.v1/cri; 2.x adds io.containerd.cri.v1/runtime and /images.
    return {"error": None, "plugins": [plugin for plugin in plugins
                                       if plugin["id"] == "cri" or plugin["type"].startswith("io.containerd.cri.")]}


# -- protobuf wire format (https://protobuf.dev/programming-guides/encoding/) ---------------------------

def encode_status_request(verbose):
    """``StatusRequest {bool verbose = 1}``; proto3 omits a false bool."""
    return b"\x08\x01" if verbose else b""


def _varint(data, pos):
    value = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint at byte %d" % pos)
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes at byte %d" % pos)


def fields(data):
    """``[(field number, value)]`` of one message; varints as int, length-delimited as bytes."""
    if not isinstance(data, bytes):
        raise ValueError("expected an embedded message, found a number")
    out = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, pos = _varint(data, pos)
        elif wire_type == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise ValueError("field %d is longer than the message" % number)
            value, pos = data[pos:pos + length], pos + length
        elif wire_type in (1, 5):
            width = 8 if wire_type == 1 else 4
            if pos + width > len(data):
                raise ValueError("field %d is longer than the message" % number)
            value, pos = data[pos:pos + width], pos + width
        else:
            raise ValueError("unsupported wire type %d for field %d" % (wire_type, number))
        out.append((number, value))
    return out


def _text(value):
    if not isinstance(value, bytes):
        raise ValueError("expected a string field, found a number")
    return value.decode("utf-8", "replace")


def _flags(data, names):
    return {names.get(number, "field_%d" % number): bool(value) for number, value in fields(data) if value}


def decode_status_response(data):
    """``StatusResponse`` as crictl prints it, except that ``info`` stays a map of raw strings.

    status = 1 (RuntimeStatus: repeated RuntimeCondition conditions = 1 {type 1, status 2, reason 3,
    message 4}); info = 2 (map<string,string>); runtime_handlers = 3 (RuntimeHandler {name 1,
    features 2}); features = 4 (RuntimeFeatures).
    """
    response = {"status": {"conditions": []}, "info": {}}
    for number, value in fields(data):
        if number == 1:
            for condition_number, condition in fields(value):
                if condition_number == 1:
                    response["status"]["conditions"].append(_condition(condition))
        elif number == 2:
            entry = dict(fields(value))
            response["info"][_text(entry.get(1, b""))] = _text(entry.get(2, b""))
        elif number == 3:
            response.setdefault("runtimeHandlers", []).append(_runtime_handler(value))
        elif number == 4:
            response["features"] = _flags(value, _RUNTIME_FEATURES)
    return response


def _condition(data):
    condition = {"type": "", "status": False, "reason": "", "message": ""}
    for number, value in fields(data):
        if number == 1:
            condition["type"] = _text(value)
        elif number == 2:
            condition["status"] = bool(value)
        elif number == 3:
            condition["reason"] = _text(value)
        elif number == 4:
            condition["message"] = _text(value)
    return condition


def _runtime_handler(data):
    # crictl leaves out an empty name: the default handler shows as an entry without "name".
    handler = {}
    for number, value in fields(data):
        if number == 1 and value:
            handler["name"] = _text(value)
        elif number == 2:
            features = _flags(value, _RUNTIME_HANDLER_FEATURES)
            if features:
                handler["features"] = features
    return handler


def decode_plugins_response(data):
    """``PluginsResponse {repeated Plugin plugins = 1}``; Plugin {type 1, id 2, requires 3, platforms 4,
    exports 5, capabilities 6, init_err 7 (google.rpc.Status {code 1, message 2})}
    (containerd api/services/introspection/v1/introspection.proto; checked against a live 1.6.20 daemon)."""
    plugins = []
    for number, value in fields(data):
        if number != 1:
            continue
        plugin = {"type": "", "id": "", "init_error": None}
        for plugin_number, plugin_value in fields(value):
            if plugin_number == 1:
                plugin["type"] = _text(plugin_value)
            elif plugin_number == 2:
                plugin["id"] = _text(plugin_value)
            elif plugin_number == 7:
                plugin["init_error"] = _text(dict(fields(plugin_value)).get(2, b"")) or None
        plugins.append(plugin)
    return plugins
