"""Node-side bounds (issue 22 item 4), each class enumerated with real processes and real directory trees:

- output size: a command printing 0 bytes up to ten times the cap gets its whole output up to the cap, and past it one
  message and nothing kept;
- process trees: a command leaving background children (1 to 3 levels deep) that hold its stdout ends with its own
  output, and every process of its group is gone;
- glob expansion: directories linked into themselves (1 to 8 links) under patterns of 1 to 8 levels either expand
  (within the budget) or are refused with the pattern's error, never past the budget.
"""
import os
import time

import pytest
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.gather import run_command
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.goglob import GlobLimitError, glob
from support.node_trees import executable

CAP = 64 * 1024


@pytest.mark.parametrize("size", [0, 1, CAP - 1, CAP, CAP + 1, 3 * CAP + 7, 10 * CAP])
def test_output_of_every_size_is_kept_to_the_cap_and_refused_past_it(tmp_path, size):
    printer = executable(tmp_path / "printer", f"#!/bin/sh\nhead -c {size} /dev/zero\n")
    rc, stdout, _stderr, error = run_command([printer], 30, max_bytes=CAP)
    if size <= CAP:
        assert (rc, len(stdout), error) == (0, size, None)
    else:
        assert (rc, stdout) == (None, b"") and error.endswith(f"printed more than {CAP} bytes, the limit: killed")


def _gone(pid):
    for _attempt in range(100):
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
                if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("printed", ["", "version = 2\n"])
def test_a_tree_of_children_holding_stdout_ends_with_the_command(tmp_path, depth, printed):
    pids = tmp_path / "pids"
    # Each level records its pid and starts the next in the background (all hold stdout); the last sleeps for ever.
    nxt = "exec sleep infinity"
    for level in range(depth, 0, -1):
        script = executable(tmp_path / f"level-{level}", f"#!/bin/sh\necho $$ >> {pids}\n{nxt}\n")
        nxt = f"{script} &\nwait"
    inner = nxt.replace("\nwait", "")
    # The wrapper waits until every level has started (so each is there to be killed), then prints and exits.
    wait = f'while [ "$(cat {pids} 2>/dev/null | wc -l)" -lt {depth} ]; do sleep 0.05; done'
    wrapper = executable(tmp_path / "wrapper", f"#!/bin/sh\n{inner}\n{wait}\nprintf '%s' '{printed}'\n")
    rc, stdout, _stderr, error = run_command([wrapper], 60)
    assert (rc, error) == (0, None) and stdout.decode() == printed
    assert len(pids.read_text().split()) == depth
    assert all(_gone(int(pid)) for pid in pids.read_text().split())


@pytest.mark.parametrize("links", [1, 2, 8])
@pytest.mark.parametrize("levels", [1, 2, 4, 8])
def test_self_linked_directories_expand_within_the_budget_or_are_refused(tmp_path, links, levels):
    conf = tmp_path / "conf.d"
    conf.mkdir()
    (conf / "a.toml").write_text("")
    for number in range(links):
        os.symlink(".", conf / f"loop-{number}")
    pattern = str(conf) + "/*" * (levels - 1) + "/*.toml"
    try:
        matches = glob(pattern, max_paths=1000)
    except GlobLimitError as error:
        assert levels > 1 and ("directory loop" in str(error) or "more than 1000 paths" in str(error))
    else:
        assert levels == 1 and matches == [str(conf / "a.toml")]
