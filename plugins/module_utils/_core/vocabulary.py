"""The words a verdict is said in, each decided or formatted here and nowhere else.

The three verdicts (``OK``, ``MISSING``, ``UNKNOWN``) and a rollout's ``NOT_REACHED``, which one a verdict holds
(``status``), whether a host ``passed``, the ``MISSING=<handler>`` / ``UNKNOWN=<reason>`` / ``NOT_REACHED=<reason>`` /
``OK`` lines a user reads, whether a registered task result can be used (was the cluster read, were the facts gathered)
and whether a whole run passed.
Every other module imports these instead of re-typing the words.
"""

OK = "OK"
MISSING = "MISSING"
UNKNOWN = "UNKNOWN"
VERDICTS = (OK, MISSING, UNKNOWN)
# Verdicts reached from facts; an UNKNOWN host proves nothing either way.
JUDGED = (OK, MISSING)
# Not a verdict about the node but a state of the run: a rollout stopped (or, per batch, has not yet come) before the
# host's batch, so nothing changed or judged it. Only a rollout's summary gives it (_change/rollout); like UNKNOWN it
# fails and is never judged, and where counts are kept it is counted apart, only when some host has it.
NOT_REACHED = "NOT_REACHED"
STATUSES = VERDICTS + (NOT_REACHED,)

# The key of a verdict that holds one of VERDICTS, in every result, report.json and verdicts file.
STATUS_KEY = "status"


def status_of(verdict):
    """OK, MISSING, UNKNOWN or NOT_REACHED; None when ``verdict`` holds none (not a verdict)."""
    if not isinstance(verdict, dict):
        return None
    status = verdict.get(STATUS_KEY)
    return status if status in STATUSES else None


def with_status(fields, status):
    """``fields`` with the status under STATUS_KEY."""
    return {**fields, STATUS_KEY: status}


def passed(verdict):
    """A host passes only when it is OK: MISSING, UNKNOWN and NOT_REACHED fail."""
    return status_of(verdict) == OK


def was_judged(verdict):
    return status_of(verdict) in JUDGED


def missing_line(handler):
    return f"MISSING={handler}"


def unknown_line(reason):
    return f"UNKNOWN={reason}"


def not_reached_line(reason):
    return f"{NOT_REACHED}={reason}"


def verdict_lines(verdict):
    """What a user reads for one node: ``MISSING=<handler>`` lines, ``UNKNOWN=<reason>``, ``NOT_REACHED=<reason>`` or
    ``OK``."""
    status = status_of(verdict)
    if status == MISSING:
        return [missing_line(handler) for handler in verdict["missing_handlers"]]
    if status == UNKNOWN:
        return [unknown_line(verdict["reason"])]
    if status == NOT_REACHED:
        return [not_reached_line(verdict["reason"])]
    return [OK]


def run_passed(cluster_read, verdicts):
    """A run passes only when the cluster was read and every host (at least one) is OK: a run that could not read
    the cluster, or judged nobody, never passes."""
    verdicts = list(verdicts)
    return bool(cluster_read and verdicts and all(passed(verdict) for verdict in verdicts))


def host_unreachable(what, message):
    """Why nothing came back from a host whose connection failed while ``what`` ("gathering containerd facts")."""
    return f"host unreachable while {what}: {message}"


def why_unusable(result, what, when_absent):
    """Why a registered task result cannot be judged from, or None when it can."""
    if result is None:
        return when_absent
    if result.get("unreachable"):
        return host_unreachable(what, result.get("msg", "no message"))
    if result.get("failed"):
        return f"{what} failed: {result.get('msg', 'no message')}"
    if result.get("skipped"):
        return f"{what} was skipped"
    return None


CLUSTER_NEVER_ASKED = "the cluster was never asked (was localhost left out by --limit?)"


def cluster_not_read(cluster_result):
    """Why the cluster (a ``runtimeclass_info`` result) was not read, or None when it was.

    A variable named by ``cluster_result_var`` is read as stored, unchecked: whatever it holds that is no result says so.
    """
    if cluster_result is not None and not isinstance(cluster_result, dict):
        return "the cluster result is a %s, not what runtimeclass_info returns" % type(cluster_result).__name__
    error = why_unusable(cluster_result, "reading RuntimeClasses from the cluster", CLUSTER_NEVER_ASKED)
    if error is None and not isinstance(cluster_result.get("runtimeclasses"), list):
        error = "the runtimeclass_info result holds no runtimeclasses"
    return error
