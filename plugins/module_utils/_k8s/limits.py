# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""How long and how much one run may ask of the API server (docs/security.md): defaults, options, their resolution."""

import os

from ansible.module_utils.basic import env_fallback

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import shown_value
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.errors import KubeAccessError

DEFAULT_PAGE_SIZE = 500
DEFAULT_REQUEST_TIMEOUT = 30
# request_timeout bounds each read of the socket, so a server that sends a byte now and then never times out.
# These bound the whole: one request's answer, and one list however many pages it has. The defaults are far
# above what a healthy cluster needs (a 500-object page arrives in well under a second).
DEFAULT_REQUEST_DEADLINE = 120
DEFAULT_LIST_PAGE_BUDGET = 1000
DEFAULT_LIST_TIME_BUDGET = 600
# One answer's body, decoded (a gzip body counts inflated): a 500-object page of Nodes is a few megabytes.
DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024
LIMIT_ARG_SPEC = {
    "request_deadline": {"type": "int", "default": DEFAULT_REQUEST_DEADLINE,
                         "fallback": (env_fallback, ["RUNTIME_GATE_REQUEST_DEADLINE"])},
    "list_page_budget": {"type": "int", "default": DEFAULT_LIST_PAGE_BUDGET,
                         "fallback": (env_fallback, ["RUNTIME_GATE_LIST_PAGE_BUDGET"])},
    "list_time_budget": {"type": "int", "default": DEFAULT_LIST_TIME_BUDGET,
                         "fallback": (env_fallback, ["RUNTIME_GATE_LIST_TIME_BUDGET"])},
    "max_response_bytes": {"type": "int", "default": DEFAULT_MAX_RESPONSE_BYTES,
                           "fallback": (env_fallback, ["RUNTIME_GATE_MAX_RESPONSE_BYTES"])},
}
WHOLE_NUMBERS = ("list_page_budget", "max_response_bytes")


def resolve_limits(limits=None, environ=None):
    """``{"request_deadline", "list_page_budget", "list_time_budget", "max_response_bytes"}``: the values given in ``limits``, else
    ``RUNTIME_GATE_<NAME>`` from the environment, else the defaults. Raises ``KubeAccessError`` for a value
    that is not a positive number, naming the option or variable it came from."""
    environ = os.environ if environ is None else environ
    resolved = {}
    for name, spec in LIMIT_ARG_SPEC.items():
        variable = spec["fallback"][1][0]
        value, origin = (limits or {}).get(name), name
        if value is None and environ.get(variable):
            value, origin = environ[variable], variable
        if value is None:
            value = spec["default"]
        resolved[name] = _positive_number(value, origin, whole=name in WHOLE_NUMBERS)
    return resolved


def _positive_number(value, origin, whole):
    try:
        number = int(value) if whole else float(value)
    except (TypeError, ValueError, OverflowError):
        number = None
    if isinstance(value, bool) or number is None or not 0 < number < float("inf"):
        unit = "whole number" if whole else "number of seconds"
        raise KubeAccessError(f"{origin} must be a positive {unit}, not {shown_value(value)}")
    return number
