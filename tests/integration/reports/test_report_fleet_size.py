"""report.html and junit.xml at fleet size: 8 and 200 hosts judged by the collection's own path (judge →
collect_verdicts → fleet_view → write_reports), laid out by a real headless Chromium at 1400 and 800 px.

RUNTIME_GATE_SCREENSHOT_DIR keeps the screenshots (else they go to the test's temp dir)."""
import os
import re
from pathlib import Path
from xml.etree import ElementTree

import pytest
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._explain.findings import explanation_lines
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.report import write_reports
from reports_support import chromium_probe, chromium_run, png_size, synthetic_fleet, visible_text

NOW = "2026-12-01T03:00:00Z"
OLD_PAGE_HEIGHT = 14_000  # px: report.html at 200 hosts before grouping (issue 14)


@pytest.fixture(scope="module")
def fleets(tmp_path_factory):
    """size → (report, report_dir, verdicts, kinds)."""
    written = {}
    for size in (8, 200):
        verdicts, fleet, kinds = synthetic_fleet(size)
        report_dir = tmp_path_factory.mktemp(f"fleet-{size}")
        report, _paths = write_reports(report_dir, verdicts, fleet, generated_at=NOW)
        written[size] = (report, report_dir, verdicts, kinds)
    return written


def squeezed(text):
    """Text without whitespace: the DOM's text nodes come apart at each tag (`<code>x</code>: y` → "x : y")."""
    return re.sub(r"\s+", "", text)


def hosts_of(kinds, kind):
    return sorted(host for host, its_kind in kinds.items() if its_kind == kind)


def test_alike_hosts_are_one_row_with_a_count_failing_first_collapsed(fleets, chromium, tmp_path):
    report, report_dir, _verdicts, kinds = fleets[200]
    html = (report_dir / "report.html").read_text(encoding="utf-8")
    assert "<details open" not in html and " open>" not in html  # nothing is open until the reader opens it
    seen = visible_text(chromium_run(chromium, report_dir / "report.html", tmp_path, "--dump-dom").stdout)
    header = seen.rows.index(next(row for row in seen.rows if row[:2] == ["verdict", "hosts"]))
    group_rows = [row for row in seen.rows[header + 1:] if row and re.match(r"^. (OK|MISSING|UNKNOWN)$", row[0])]
    verdicts = [row[0].split()[1] for row in group_rows]
    # six ways to end: three kinds of MISSING, the unjudged hosts, GPU nodes and CPU nodes that are fine
    assert verdicts == ["MISSING", "MISSING", "MISSING", "UNKNOWN", "OK", "OK"]
    counts = [int(row[1].split()[0]) for row in group_rows]
    assert sum(counts) == 200 and counts[:3] == sorted(counts[:3], reverse=True)
    assert sorted(counts) == sorted(len(hosts_of(kinds, kind)) for kind in set(kinds.values()))
    # the names behind a count are not on the page until opened
    hidden = hosts_of(kinds, "gpu")
    assert not any(host in seen.text for host in hidden[:20])
    assert all(host in html for host in hidden)
    # RuntimeClass cells: a count, not a hundred names
    rc_rows = {row[0]: row for row in seen.rows if row and row[0] in ("runc", "nvidia-gpu", "nvidia-gpu-cdi")}
    assert rc_rows["nvidia-gpu-cdi"][4] == f"{len(hosts_of(kinds, 'gpu'))} nodes"
    missing_cdi = sum(len(hosts_of(kinds, kind)) for kind in ("not_configured", "binary_missing", "files_not_examined"))
    assert rc_rows["nvidia-gpu-cdi"][5] == f"\u2718 {missing_cdi} nodes"
    assert max(sum(host in " ".join(row) for host in kinds) for row in seen.rows) <= 3  # no cell lists the fleet


@pytest.mark.parametrize("size", [8, 200])
@pytest.mark.parametrize("width", [1400, 800])
def test_page_stays_short_and_no_name_or_badge_wraps(fleets, chromium, tmp_path, size, width):
    _report, report_dir, _verdicts, _kinds = fleets[size]
    measured = chromium_probe(chromium, report_dir / "report.html", tmp_path, width=width)
    assert measured["width"] == width and measured["open_details"] == 0
    # the page a reader opens is about as tall at 200 hosts as at 8: groups, not hosts
    assert measured["collapsed_height"] < 2_500 < OLD_PAGE_HEIGHT, measured
    assert measured["expanded_height"] > measured["collapsed_height"] * 1.5  # the toggles do hold the hosts
    # opened in full, every badge and every host or node name still sits on one line; wide tables scroll in
    # their own box instead of widening the page
    assert measured["badges"] > size and measured["names"] > size
    assert measured["wrapped"] == [], measured["wrapped"][:10]
    assert measured["page_width"] <= width, measured
    shots = os.environ.get("RUNTIME_GATE_SCREENSHOT_DIR")
    shot = (Path(shots) if shots else tmp_path) / f"report-{size}-hosts-{width}px.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    chromium_run(chromium, report_dir / "report.html", tmp_path, f"--screenshot={shot}", "--hide-scrollbars",
                 window=f"{width},{measured['collapsed_height']}")
    assert png_size(shot) == (width, measured["collapsed_height"]) and shot.stat().st_size > 40_000


def test_filter_box_finds_hosts_handlers_and_codes(fleets, chromium, tmp_path):
    _report, report_dir, _verdicts, kinds = fleets[200]
    unconfigured, lost_binary = hosts_of(kinds, "not_configured"), hosts_of(kinds, "binary_missing")
    one_host = lost_binary[0]
    queries = [one_host, "not_configured_anywhere", "nvidia-cdi runtime_binary_missing", "no-such-host"]
    results = chromium_probe(chromium, report_dir / "report.html", tmp_path, width=1400, filters=queries)["filters"]
    assert results[one_host] == {"rows": 1, "hosts": [one_host]}  # its row, opened on that one name
    assert results["not_configured_anywhere"]["rows"] == 1 and results["not_configured_anywhere"]["hosts"] == []
    assert results["nvidia-cdi runtime_binary_missing"]["rows"] == 1
    assert results["no-such-host"]["rows"] == 0
    html = (report_dir / "report.html").read_text(encoding="utf-8")
    assert "src=" not in html and "http://" not in html and "https://" not in html  # works offline
    assert len(unconfigured) > 3
    # a link to a host (#host-<name>) opens its block and the group around it, nothing else
    dom = chromium_run(chromium, report_dir / "report.html", tmp_path, "--dump-dom", fragment=f"host-{one_host}").stdout
    opened = re.findall(r'<details[^>]*\bopen=""[^>]*>', dom)
    assert len(opened) == 2 and f'id="host-{one_host}"' in opened[1] and 'class="group"' in opened[0], opened


def test_html_and_junit_carry_the_consoles_explanations(fleets, chromium, tmp_path):
    report, report_dir, verdicts, kinds = fleets[8]
    seen = squeezed(visible_text(chromium_run(chromium, report_dir / "report.html", tmp_path, "--dump-dom").stdout).text)
    # visible without opening anything: each failing group's lines and explanation
    assert squeezed("MISSING=nvidia-cdi nvidia-cdi: NOT_CONFIGURED_ANYWHERE") in seen
    assert squeezed("nvidia-cdi: not explained: the node's config files were not examined") in seen
    assert squeezed("nvidia-cdi: RUNTIME_BINARY_MISSING") in seen and squeezed("which does not exist on the node") in seen
    cases = {case.get("name"): case for case in ElementTree.parse(report_dir / "junit.xml").getroot().iter("testcase")}
    for host, verdict in verdicts.items():
        failure = cases[host].find("failure")
        if verdict["status"] == "OK":
            assert failure is None
            continue
        # the console's message for the host (node_crosscheck: its lines, then explanation_lines)
        assert failure.text == "\n".join(verdict["lines"] + explanation_lines(verdict))
    not_configured = cases[hosts_of(kinds, "not_configured")[0]].find("failure").text
    assert "nvidia-cdi: NOT_CONFIGURED_ANYWHERE" in not_configured
    not_examined = cases[hosts_of(kinds, "files_not_examined")[0]].find("failure").text
    assert "nvidia-cdi: not explained: the node's config files were not examined" in not_examined
    lost_binary = cases[hosts_of(kinds, "binary_missing")[0]].find("failure").text
    assert "RUNTIME_BINARY_MISSING (error):" in lost_binary and "remedy: Install /usr/bin/nvidia-container-runtime.cdi" in lost_binary
    assert report["counts"]["MISSING"] == 3


def test_code_spans_in_finding_texts_are_code_not_backticks(fleets, chromium, tmp_path):
    report, report_dir, _verdicts, _kinds = fleets[8]
    typo = next(finding for finding in report["fleet_findings"] if finding["handlers"] == ["nvdia"])
    assert "`nvidia`" in typo["message"]  # the finding's own text quotes the name that way
    html = (report_dir / "report.html").read_text(encoding="utf-8")
    assert "`" not in visible_text(chromium_run(chromium, report_dir / "report.html", tmp_path, "--dump-dom").stdout).text
    assert "(did you mean <code>nvidia</code>?)" in html
