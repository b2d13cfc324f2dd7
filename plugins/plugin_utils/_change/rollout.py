# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""What a rollout's summary adds to the crosscheck table: hosts whose role run failed (a restart, a rollback), with the
role's message, and hosts still waiting for their batch, which are UNKNOWN because nothing judged them yet, not
because they failed. Controller side, pure."""

WAITING_REASON = "waiting for its batch: not changed and not judged yet"


def rollout_annotations(verdicts, host_facts, *, failure_var, reached_var):
    """Sets the reason of every waiting host's UNKNOWN verdict; returns the table lines naming role failures.

    ``host_facts`` maps each host to its variables: ``failure_var`` set means the role failed there (its message),
    ``reached_var`` unset means the host's batch never started.
    """
    lines = []
    for host in sorted(verdicts):
        facts = host_facts.get(host) or {}
        if reached_var and not facts.get(reached_var) and verdicts[host]["verdict"] == "UNKNOWN":
            verdicts[host]["reason"] = WAITING_REASON
        failure = facts.get(failure_var) if failure_var else None
        if failure:
            lines.append(f"{host}: the containerd_runtimes role failed: {failure}")
    return lines
