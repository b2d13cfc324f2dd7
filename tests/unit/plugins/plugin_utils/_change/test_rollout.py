"""What a rollout's summary adds (issue 23 item 7): hosts not reached, and in check mode what each host would become."""
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.rollout import WAITING_REASON, rollout_annotations

PLAN = {"refused": False, "changed_files": ["/etc/containerd/conf.d/99-gpufleet.toml"],
        "proof": {"loaded_runtimes": ["nvidia", "runc"], "default_runtime": "runc", "containerd_version": "2.3.4"}}


def verdicts():
    return {host: {"status": "UNKNOWN", "reason": "no verdict"} for host in ("a", "b", "c")}


def test_check_mode_says_what_each_proven_host_would_become_and_skips_refused_ones():
    facts = {"a": {"reached": True, "containerd_runtimes_plan": PLAN},
             "b": {"reached": True, "containerd_runtimes_plan": {"refused": True, "msg": "no"}}, "c": {}}
    found = verdicts()
    lines = rollout_annotations(found, facts, failure_var="failed", reached_var="reached", check_mode=True)
    assert lines == ["a: check mode: would change /etc/containerd/conf.d/99-gpufleet.toml; the proven candidate serves "
                     "nvidia, runc (default runc) with containerd 2.3.4"]
    assert found["c"]["reason"] == WAITING_REASON and WAITING_REASON.startswith("not reached")
    assert rollout_annotations(verdicts(), facts, failure_var="failed", reached_var="reached") == []
