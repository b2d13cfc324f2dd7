# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The message of a rollback after a failed restart or verification: what failed (with the command's stderr), that the
previous files were restored, and whether containerd answers again on them, or is down. Controller side, pure."""


def result_text(result):
    """A failed task's ``msg`` with the stderr a command left (``non-zero return code`` alone says nothing)."""
    if not isinstance(result, dict):
        return "no message"
    message = str(result.get("msg") or "no message")
    stderr = str(result.get("stderr") or "").strip()
    return f"{message}: {stderr}" if stderr and stderr not in message else message


def rollback_message(host, *, failed_task, failed_result, restart_result, wait_result):
    """One message for the host: why the change was rolled back, then the state containerd is left in."""
    head = f"containerd_runtimes: {failed_task or 'a step'} failed after the change: {result_text(failed_result)}."
    if not isinstance(restart_result, dict) or restart_result.get("rc") != 0:
        return (f"{head} The previous files were restored, but containerd is down on {host}: restarting it on the "
                f"restored files failed too ({result_text(restart_result)}). Start it by hand and check its log.")
    if not isinstance(wait_result, dict) or wait_result.get("rc") != 0:
        return (f"{head} The previous files were restored and containerd was restarted on them, but containerd is down "
                f"on {host}: it does not answer ({result_text(wait_result)}). Check its log.")
    return f"{head} The previous files were restored and containerd answers again on {host}."
