"""The rollback's message (issue 13 items 5 and 10): the failed command's stderr, and containerd down said plainly."""
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.rollback import rollback_message

FAILED = {"failed": True, "rc": 1, "msg": "non-zero return code", "stderr": "Job for containerd.service failed"}


def test_the_restart_on_the_restored_files_fails_too():
    message = rollback_message("gpu-1", failed_task="Restart containerd", failed_result=FAILED,
                               restart_result=FAILED, wait_result={"skipped": True})
    assert message == ("containerd_runtimes: Restart containerd failed after the change: non-zero return code: Job for "
                       "containerd.service failed. The previous files were restored, but containerd is down on gpu-1: "
                       "restarting it on the restored files failed too (non-zero return code: Job for containerd.service "
                       "failed). Start it by hand and check its log.")


def test_containerd_does_not_answer_after_the_restore():
    message = rollback_message("gpu-1", failed_task="Wait until containerd answers", failed_result={"msg": "timeout"},
                               restart_result={"rc": 0}, wait_result={"rc": 1, "msg": "non-zero return code",
                                                                      "stderr": "connection refused"})
    assert "but containerd is down on gpu-1: it does not answer (non-zero return code: connection refused)" in message


def test_containerd_runs_again():
    message = rollback_message("gpu-1", failed_task="Require every runtime of the plan loaded and served",
                               failed_result={"msg": "MISSING=nvidia"}, restart_result={"rc": 0}, wait_result={"rc": 0})
    assert message.endswith("MISSING=nvidia. The previous files were restored and containerd answers again on gpu-1.")
