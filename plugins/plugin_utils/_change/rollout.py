# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""What a rollout's summary adds to the crosscheck table: hosts whose role run failed (a restart, a rollback), with the
role's message, hosts still waiting for their batch ("not reached": UNKNOWN because nothing judged them yet, not
because they failed), and in check mode what each host's proven candidate would serve. Controller side, pure."""

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.vocabulary import UNKNOWN, status_of

WAITING_REASON = "not reached: waiting for its batch, not changed and not judged yet"
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
    """Sets the reason of every waiting host's UNKNOWN verdict; returns the table lines naming role failures.

    ``host_facts`` maps each host to its variables: ``failure_var`` set means the role failed there (its message),
    ``reached_var`` unset means the host's batch never started.
    """
    lines = []
    for host in sorted(verdicts):
        facts = host_facts.get(host) or {}
        if reached_var and not facts.get(reached_var) and status_of(verdicts[host]) == UNKNOWN:
            verdicts[host]["reason"] = WAITING_REASON
        failure = facts.get(failure_var) if failure_var else None
        if failure:
            lines.append(f"{host}: the containerd_runtimes role failed: {failure}")
    return lines + (check_mode_lines(verdicts, host_facts) if check_mode else [])
