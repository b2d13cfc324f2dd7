"""Edits the running daemon has not loaded (issue 23 item 2): the pure comparison; the real 1.6 and 2.x daemons are in
tests/integration/role/test_role_daemon.py and test_role_containerd_2x.py."""
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.pending import pending_edits, refusal, unaccepted

RUNC = {"runtime_type": "io.containerd.runc.v2", "options": {"SystemdCgroup": True}}


def view(runtimes, default="runc", state="serving"):
    return {"state": state, "reason": None, "runtime_details": runtimes, "default_runtime": default}


def files(runtimes, default="runc"):
    return {"runtimes": runtimes, "default_runtime_name": default}


def test_a_removed_option_a_new_runtime_and_a_default_are_each_named():
    edits, reason = pending_edits(
        view({"runc": RUNC, "old": RUNC}),
        files({"runc": {"runtime_type": "io.containerd.runc.v2", "options": {"SystemdCgroup": False}},
               "kata": {"runtime_type": "io.containerd.kata.v2", "options": {}}}, default="kata"),
        named_runtimes=set(), default_named=False)
    assert reason is None
    assert edits == ["runtimes.kata: not served (running) -> defined (files)",
                     "runtimes.old: served (running) -> not defined (files)",
                     "runtimes.runc.options.SystemdCgroup: True (running) -> (absent) (files)",
                     "default_runtime_name: 'runc' (running) -> 'kata' (files)"]


def test_the_inputs_own_runtimes_and_zero_values_are_no_pending_edit():
    edits, _accepted = pending_edits(view({"runc": {"runtime_type": "io.containerd.runc.v2", "options": {"Root": ""}}, "nvidia": RUNC}),
                                     files({"runc": {"runtime_type": "io.containerd.runc.v2", "options": {}}}),
                                     named_runtimes={"nvidia"}, default_named=False)
    assert edits == []


def test_an_unknown_view_compares_nothing_and_says_why():
    assert pending_edits(view(None, state="unknown") | {"reason": "not asked"}, files({}), named_runtimes=set(),
                         default_named=False) == ([], "not asked")


def test_accepting_names_a_key_or_a_prefix_and_the_refusal_lists_what_to_accept():
    edits = ["runtimes.runc.options.SystemdCgroup: True (running) -> (absent) (files)", "runtimes.kata: x"]
    assert unaccepted(edits, ["runtimes.runc"]) == ["runtimes.kata: x"]
    assert unaccepted(edits, ["runtimes.run"]) == edits  # a prefix of whole keys only
    assert "option accept_pending_edits: ['runtimes.kata', 'runtimes.runc.options.SystemdCgroup']" in refusal(edits)
