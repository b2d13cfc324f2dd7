# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""What a rollout's summary adds to the crosscheck table: hosts whose role run failed (a restart, a rollback), pointing
to the role's message (printed once, by the role's failed task), hosts whose batch has not run (NOT_REACHED: nothing
changed or judged them, so they are no node verdict, and they fail like UNKNOWN), and in check mode what each host's
proven candidate would serve. Controller side, pure."""

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.vocabulary import (
    NOT_REACHED,
    UNKNOWN,
    not_reached_line,
    status_of,
    with_status,
)

WAITING_REASON = "its batch has not run: not changed and not judged"
# The role's registered plan (containerd_runtime_config's result): in check mode, what the host would become.
ROLE_PLAN_VAR = "containerd_runtimes_plan"


def check_mode_lines(verdicts, host_facts):
    """In check mode the verdicts judge each node as it is; one line per host says what the proven candidate would
    make it serve (the role's plan, proven with the node's real containerd), or that nothing would change."""
    lines = []
    for host in sorted(verdicts):
        plan = (host_facts.get(host) or {}).get(ROLE_PLAN_VAR)
        proof = plan.get("proof") if isinstance(plan, dict) and not plan.get("refused", True) else None
        if not isinstance(proof, dict):
            continue
        change = "would change " + ", ".join(plan.get("changed_files") or []) if plan.get("changed_files") else "nothing to change"
        lines.append(f"{host}: check mode: {change}; the proven candidate serves "
                     f"{', '.join(proof.get('loaded_runtimes') or []) or 'no runtime'} (default "
                     f"{proof.get('default_runtime') or 'runc'}) with containerd {proof.get('containerd_version')}")
    return lines


def rollout_annotations(verdicts, host_facts, *, failure_var, reached_var, check_mode=False):
    """Makes every host whose batch never started NOT_REACHED; returns the table lines naming role failures.

    ``host_facts`` maps each host to its variables: ``failure_var`` set means the role failed there (its message,
    already printed by the role's failed task: the line points there instead of repeating it), ``reached_var`` unset
    means the host's batch never started. A host that was judged (OK, MISSING) keeps its verdict.
    """
    lines = []
    for host in sorted(verdicts):
        facts = host_facts.get(host) or {}
        if reached_var and not facts.get(reached_var) and status_of(verdicts[host]) == UNKNOWN:
            verdicts[host] = with_status(dict(verdicts[host], reason=WAITING_REASON,
                                              lines=[not_reached_line(WAITING_REASON)]), NOT_REACHED)
        failure = facts.get(failure_var) if failure_var else None
        if failure:
            lines.append(f"{host}: the containerd_runtimes role failed; its message is printed above, under its "
                         f"failed task (fatal: [{host}])")
    return lines + (check_mode_lines(verdicts, host_facts) if check_mode else [])
