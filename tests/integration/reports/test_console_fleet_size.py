"""The fleet summary the terminal shows (crosscheck_summary's and report_merge's table_lines) at 8, 200 and 1,000
hosts judged by the collection's own path (judge → collect_verdicts → summary_lines): every host's row at 8; above
20 hosts the hosts that did not pass first, grouped by cause, the OK hosts as one line, and the counts line last.
A real ansible-playbook run through the console callback at fleet size: tests/integration/test_console.py."""
import re

import pytest
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.summary import (
    FLEET_VIEW_ABOVE_HOSTS,
    OK_NAMES_SHOWN,
    summary_lines,
    summary_table,
)
from reports_support import synthetic_fleet

EXTRA = ["Fleet findings:", "  ERROR SOMETHING: stands for the lines the summary passes through"]
COUNTS = re.compile(r"^(\d+) OK, (\d+) MISSING, (\d+) UNKNOWN of (\d+) hosts$")


def test_eight_hosts_keep_the_whole_table():
    verdicts, _fleet, _kinds = synthetic_fleet(8)
    lines = summary_lines(verdicts, EXTRA)
    assert lines == summary_table(verdicts) + EXTRA
    assert re.fullmatch(r"HOST +VERDICT +DEFAULT +MISSING / REASON", lines[0])
    assert [line.split()[0] for line in lines[1:9]] == sorted(verdicts)
    assert COUNTS.match(lines[9]) and len(lines) == 8 + 2 + len(EXTRA)


@pytest.mark.parametrize("size", [FLEET_VIEW_ABOVE_HOSTS + 1, 200, 1000])
def test_fleet_view_shows_failing_hosts_by_cause_first_and_the_counts_last(size):
    verdicts, _fleet, kinds = synthetic_fleet(size)
    lines = summary_lines(verdicts, EXTRA)
    failing = sorted(host for host, verdict in verdicts.items() if verdict["status"] != "OK")
    passing = sorted(host for host, verdict in verdicts.items() if verdict["status"] == "OK")
    assert failing and passing, kinds

    # the counts line last, right after the lines passed through
    assert lines[-len(EXTRA) - 1:-1] == EXTRA
    missing = sum(verdicts[host]["status"] == "MISSING" for host in failing)
    unknown = sum(verdicts[host]["status"] == "UNKNOWN" for host in failing)
    assert COUNTS.fullmatch(lines[-1]).groups() == (str(len(passing)), str(missing), str(unknown), str(size))
    assert lines[0] == f"{len(failing)} of {size} hosts did not pass, by cause (every host: the reports and the verdicts file):"

    # each failing host once, as a table row under its group's header; MISSING groups first, largest first
    body = lines[1:-len(EXTRA) - 2]
    headers = [index for index, line in enumerate(body) if not line.startswith("  ")]
    groups = []
    for start, end in zip(headers, headers[1:] + [len(body)], strict=True):
        header = re.fullmatch(r"(MISSING|UNKNOWN)[ :](.*) \((\d+) hosts?\)", body[start])
        assert header, body[start]
        rows = body[start + 1:end]
        assert len(rows) == int(header.group(3)) and rows, (body[start], rows)
        assert all(re.match(rf"  \S+ +{header.group(1)} ", row) for row in rows), rows
        groups.append((header.group(1), len(rows), [row.split()[0] for row in rows]))
    assert sorted(host for _verdict, _count, hosts in groups for host in hosts) == failing
    assert [verdict for verdict, _count, _hosts in groups] == sorted(
        (verdict for verdict, _count, _hosts in groups), key=("MISSING", "UNKNOWN").index)
    missing_counts = [count for verdict, count, _hosts in groups if verdict == "MISSING"]
    assert missing_counts == sorted(missing_counts, reverse=True)
    # hosts alike are one group: three kinds of MISSING in the synthetic fleet, whatever its size
    assert len(missing_counts) == len({kinds[host] for host in failing if verdicts[host]["status"] == "MISSING"})

    # the OK hosts: one line, a count and the first few names; no OK host has a row
    assert lines[-len(EXTRA) - 2] == (f"OK ({len(passing)} hosts): {', '.join(passing[:OK_NAMES_SHOWN])} and "
                                      f"{len(passing) - OK_NAMES_SHOWN} more")
    assert not any(host in line for line in lines for host in passing[OK_NAMES_SHOWN:])
    assert len(lines) == 1 + len(groups) + len(failing) + 1 + len(EXTRA) + 1
