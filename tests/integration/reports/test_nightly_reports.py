"""playbooks/nightly.yml over the demo fleet: report.json against its JSON Schema, junit.xml through a JUnit
parser, report.html in headless Chromium, report.prev.json and the changed hosts over two runs, and a run
that cannot read the cluster ending with a failing report."""
import copy
import json
import shutil
import subprocess
import sys

import jsonschema
import pytest
import yaml
from junitparser import Failure, JUnitXml, TestSuite
from reports_support import (
    CROSSCHECK_PLAYBOOK,
    DEMO,
    SCHEMA_PATH,
    chromium_probe,
    chromium_run,
    demo_runtimeclasses,
    expected_demo_verdicts,
    junit_system_out,
    png_size,
    run_playbook,
    visible_text,
)

SYMBOLS = {"served": "\u2714", "missing": "\u2718", "not_required": "\u2013", "unknown": "?"}


def validate(report):
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(report)


def test_report_json_matches_its_schema_and_the_demo_verdicts(demo_run):
    assert demo_run.returncode == 2, demo_run.stdout[-3000:]
    report = demo_run.report
    validate(report)
    expected = expected_demo_verdicts()
    assert {host: (entry["status"], entry["missing_handlers"]) for host, entry in report["hosts"].items()} == expected
    assert report["passed"] is False
    assert report["counts"] == {verdict: [want[0] for want in expected.values()].count(verdict) for verdict in ("OK", "MISSING", "UNKNOWN")}
    # failures: one per missing handler of a MISSING host, one per UNKNOWN host
    want_failures = sorted((host, handler) for host, (verdict, missing) in expected.items() for handler in missing)
    want_failures += sorted((host, None) for host, (verdict, _missing) in expected.items() if verdict == "UNKNOWN")
    assert sorted(((failure["host"], failure["handler"]) for failure in report["failures"]), key=str) == sorted(want_failures, key=str)
    assert report["sources"]["cluster"]["read"] is True and report["sources"]["cluster"]["type"] == "file"
    assert report["sources"]["cluster"]["path"] == str(DEMO / "cluster.yaml")
    assert report["sources"]["inventory"] == [str(DEMO / "hosts.yml")]
    classes = demo_runtimeclasses()
    assert {entry["name"]: (entry["handler"], entry["overhead_pod_fixed"], entry["node_selector"]) for entry in report["runtimeclasses"]} == {
        name: (item["handler"], (item.get("overhead") or {}).get("podFixed"), (item.get("scheduling") or {}).get("nodeSelector"))
        for name, item in classes.items()
    }
    for host, (verdict, missing) in expected.items():
        row = report["matrix"]["rows"][host]
        if verdict == "UNKNOWN":
            assert set(row.values()) == {"unknown"}
        else:
            assert sorted(handler for handler, state in row.items() if state == "missing") == missing
    assert report["previous"] is None and report["changed_hosts"] is None  # a fresh directory


def test_fleet_and_overhead_findings_name_the_demo_problems(demo_run):
    report = demo_run.report
    served_nowhere = [finding for finding in report["fleet_findings"] if finding["code"] == "HANDLER_SERVED_NOWHERE"]
    typo = next(finding for finding in served_nowhere if finding["handlers"] == ["nvdia"])
    # the demo's pods of class nvidia-typo (cluster.yaml) are listed as evidence
    assert any("ml-canary/train-canary-0" in pod for pod in typo["evidence"]["pods"]), typo
    misfit = [finding for finding in report["overhead_findings"] if finding["code"] == "POD_DOES_NOT_FIT_WITH_OVERHEAD"]
    assert [finding["evidence"]["pod"] for finding in misfit] == ["ml-canary/bigmem-canary-0"]
    assert misfit[0]["host"] == "gpu-node-07" and misfit[0]["evidence"]["fits_without_overhead"] is True
    # the terminal summary prints them after the table, and says where the reports are
    assert "HANDLER_SERVED_NOWHERE" in demo_run.stdout and "POD_DOES_NOT_FIT_WITH_OVERHEAD" in demo_run.stdout
    assert f"Reports: {demo_run.report_dir / 'report.json'}" in demo_run.stdout


def test_schema_refuses_a_report_that_breaks_it(demo_run):
    broken = copy.deepcopy(demo_run.report)
    broken["hosts"]["gpu-node-01"]["status"] = "PROBABLY_FINE"
    with pytest.raises(jsonschema.ValidationError):
        validate(broken)
    ok_with_missing = copy.deepcopy(demo_run.report)
    ok_with_missing["hosts"]["gpu-node-02"].update(status="OK", verdict="OK")  # still lists missing handlers
    with pytest.raises(jsonschema.ValidationError):
        validate(ok_with_missing)
    # The deprecated `verdict` is the same value as `status`, never another.
    disagreeing = copy.deepcopy(demo_run.report)
    disagreeing["hosts"]["gpu-node-01"]["status"] = "MISSING"
    with pytest.raises(jsonschema.ValidationError):
        validate(disagreeing)


def test_junit_has_one_testcase_per_host_and_failures_carry_the_lines(demo_run):
    xml = JUnitXml.fromfile(str(demo_run.report_dir / "junit.xml"))
    suites = list(xml) if isinstance(xml, JUnitXml) else [xml]
    assert len(suites) == 1 and isinstance(suites[0], TestSuite)
    suite = suites[0]
    report = demo_run.report
    cases = {case.name: case for case in suite}
    assert set(cases) == set(report["hosts"])
    expected = expected_demo_verdicts()
    assert suite.tests == len(expected) and suite.failures == sum(verdict != "OK" for verdict, _missing in expected.values())
    for host, (verdict, missing) in expected.items():
        failures = [result for result in cases[host].result if isinstance(result, Failure)]
        if verdict == "OK":
            assert cases[host].is_passed and not failures
            continue
        assert len(failures) == 1 and failures[0].type == verdict
        text = failures[0].text
        assert text.splitlines()[: len(report["hosts"][host]["lines"])] == report["hosts"][host]["lines"]
        assert all(f"MISSING={handler}" in text for handler in missing)
        assert all(finding["code"] in text for finding in report["hosts"][host]["findings"])
    fleet_codes = {finding["code"] for finding in report["fleet_findings"] + report["overhead_findings"]}
    assert fleet_codes and all(code in junit_system_out(demo_run.report_dir / "junit.xml") for code in fleet_codes)


def test_report_html_shows_the_matrix_in_headless_chromium(demo_run, chromium, tmp_path):
    html_path = demo_run.report_dir / "report.html"
    html = html_path.read_text(encoding="utf-8")
    assert "src=" not in html and "http://" not in html and "https://" not in html  # self-contained, works offline
    dom = chromium_run(chromium, html_path, tmp_path, "--dump-dom").stdout
    seen = visible_text(dom)
    report = demo_run.report
    assert "RuntimeClass handler check: \u2718 FAILED" in seen.text
    counts = report["counts"]
    assert f"{counts['OK']} OK, {counts['MISSING']} MISSING, {counts['UNKNOWN']} UNKNOWN of {len(report['hosts'])} hosts" in seen.text
    # fleet findings come before the matrix, which comes before the hosts
    assert seen.text.index("HANDLER_SERVED_NOWHERE") < seen.text.index("Fleet matrix") < seen.text.index("Hosts, by group")
    header = next(row for row in seen.rows if row[:2] == ["verdict", "hosts"])
    handlers = [cell.split(" RuntimeClass")[0].split(" default runtime")[0] for cell in header[2:]]
    assert handlers == report["matrix"]["handlers"]
    # every toggle opened: each host is in exactly one group row, whose verdict and cells are the host's
    opened = visible_text(dom.replace("<details", "<details open"))
    group_rows = [row for row in opened.rows if len(row) == 2 + len(handlers) and row[0].endswith(("OK", "MISSING", "UNKNOWN"))]
    verdict_symbol = {"OK": "\u2714", "MISSING": "\u2718", "UNKNOWN": "?"}
    for host, (verdict, _missing) in expected_demo_verdicts().items():
        rows = [row for row in group_rows if host in row[1].replace(",", " ").split()]
        assert len(rows) == 1, (host, group_rows)
        assert rows[0][0] == f"{verdict_symbol[verdict]} {verdict}"
        assert rows[0][2:] == [SYMBOLS[report["matrix"]["rows"][host][handler]] for handler in handlers]
    assert [row[0].split()[1] for row in group_rows] == sorted((row[0].split()[1] for row in group_rows), key=["MISSING", "UNKNOWN", "OK"].index)
    assert "Legend: \u2714 served \u2718 missing \u2013 not required ? unknown" in seen.text
    typo_row = next(row for row in seen.rows if row and row[0] == "nvidia-typo")
    assert typo_row[1:4] == ["nvdia", "cpu=250m memory=120Mi", "gpufleet.example/pool=canary"]
    # a failing group shows its MISSING lines and their explanation without opening anything
    row_of_03 = next(index for index, row in enumerate(seen.rows) if "gpu-node-03" in row[1:2])
    explanation = seen.rows[row_of_03 + 1][0]
    assert explanation.startswith("MISSING=nvidia-cdi") and "nvidia-cdi: NOT_CONFIGURED_ANYWHERE" in explanation
    assert "<details open" not in html
    screenshot = tmp_path / "report.png"
    chromium_run(chromium, html_path, tmp_path, f"--screenshot={screenshot}")
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and screenshot.stat().st_size > 20_000


@pytest.mark.parametrize("width", [800, 1400])
def test_demo_report_fits_the_window(demo_run, chromium, tmp_path, width):
    """docs/report.md: the page is never wider than the window. The demo's long group titles (three MISSING lines and
    two finding codes) and its RuntimeClasses table (nodeSelectors, node names) wrap instead (issue 25 item 6)."""
    html_path = demo_run.report_dir / "report.html"
    measured = chromium_probe(chromium, html_path, tmp_path, width=width)
    assert measured["width"] == width and measured["client_width"] <= width
    assert measured["beyond"] == [], measured["beyond"][:10]
    assert measured["page_width"] <= measured["client_width"], measured
    tables = dict(measured["tables_right"])
    assert "runtimeclasses" in tables and tables["runtimeclasses"] <= measured["client_width"], measured["tables_right"]
    # every badge and host or node name still on one line
    assert measured["wrapped"] == [], measured["wrapped"]
    shot = tmp_path / f"demo-report-{width}px.png"
    chromium_run(chromium, html_path, tmp_path, f"--screenshot={shot}", "--hide-scrollbars",
                 window=f"{width},{measured['collapsed_height']}")
    assert png_size(shot) == (width, measured["collapsed_height"]) and shot.stat().st_size > 20_000


def test_second_run_keeps_the_previous_report_and_lists_changed_hosts(demo_run, tmp_path):
    report_dir = tmp_path / "reports"
    report_dir.mkdir()
    shutil.copy(demo_run.report_dir / "report.json", report_dir / "report.json")
    (report_dir / "notes.txt").write_text("not ours\n")
    first_text = (report_dir / "report.json").read_text()
    # Second run: the typo in nvidia-typo fixed (handler nvidia), gpu-node-08 no longer checked.
    cluster = yaml.safe_load((DEMO / "cluster.yaml").read_text())
    next(item for item in cluster["items"] if item["metadata"]["name"] == "nvidia-typo")["handler"] = "nvidia"
    fixed_cluster = tmp_path / "cluster-fixed.yaml"
    fixed_cluster.write_text(yaml.safe_dump(cluster))
    run = run_playbook(report_dir, "-e", f"runtime_gate_runtimeclasses_file={fixed_cluster}", "--limit", "all:!gpu-node-08")
    assert sorted(path.name for path in report_dir.iterdir()) == ["junit.xml", "metrics.prom", "notes.txt", "report.html", "report.json", "report.prev.json"]
    assert (report_dir / "report.prev.json").read_text() == first_text
    assert (report_dir / "notes.txt").read_text() == "not ours\n"
    report = run.report
    validate(report)
    first = json.loads(first_text)
    assert report["previous"] == {"generated_at": first["generated_at"], "error": None}
    changed = {entry["host"]: entry for entry in report["changed_hosts"]}
    assert set(changed) == {"gpu-node-07", "gpu-node-08"}, report["changed_hosts"]
    assert changed["gpu-node-08"] == {"host": "gpu-node-08", "current": None,
                                      "previous": {"status": "UNKNOWN", "missing_handlers": []}}
    node_07 = report["hosts"]["gpu-node-07"]
    assert changed["gpu-node-07"]["current"] == {"status": node_07["status"],
                                                 "missing_handlers": node_07["missing_handlers"]}
    assert "nvdia" not in node_07["missing_handlers"] and "nvdia" in changed["gpu-node-07"]["previous"]["missing_handlers"]
    assert "gpu-node-07" in (report_dir / "report.html").read_text()


@pytest.mark.parametrize("how", ["api-unreachable", "cluster-play-left-out"])
def test_a_run_that_cannot_read_the_cluster_writes_a_failing_report(tmp_path, how):
    if how == "api-unreachable":
        # nothing listens on port 1; the empty file variable sends runtimeclass_info to the API
        extra = ["-e", "runtime_gate_runtimeclasses_file=", "--limit", "localhost,gpu-node-01,gpu-node-06"]
        env = {"K8S_AUTH_HOST": "https://127.0.0.1:1", "K8S_AUTH_API_KEY": "not-a-token", "K8S_AUTH_VERIFY_SSL": "false", "KUBECONFIG": str(tmp_path / "none")}
    else:
        extra, env = ["--limit", "gpu-node-01,gpu-node-06"], {}
    run = run_playbook(tmp_path / "out", *extra, env=env, playbook=CROSSCHECK_PLAYBOOK)
    assert run.returncode == 2, run.stdout[-3000:]
    report = run.report
    validate(report)
    assert report["passed"] is False
    assert {host: entry["status"] for host, entry in report["hosts"].items()} == {"gpu-node-01": "UNKNOWN", "gpu-node-06": "UNKNOWN"}
    cluster = report["sources"]["cluster"]
    assert cluster["read"] is False
    assert ("127.0.0.1:1" in cluster["error"]) if how == "api-unreachable" else ("never asked" in cluster["error"])
    assert [finding["code"] for finding in report["fleet_findings"]] == ["CLUSTER_NOT_READ"]
    suite = next(iter(JUnitXml.fromfile(str(run.report_dir / "junit.xml"))))
    assert suite.failures == 2 and "CLUSTER_NOT_READ" in junit_system_out(run.report_dir / "junit.xml")
    assert "not read" in (run.report_dir / "report.html").read_text()


def test_an_all_ok_run_passes_with_exit_0(tmp_path):
    run = run_playbook(tmp_path / "out", "--limit", "localhost,gpu-node-01,gpu-node-06")
    assert run.returncode == 0, run.stdout[-3000:]
    report = run.report
    validate(report)
    assert report["passed"] is True and report["failures"] == []
    suite = next(iter(JUnitXml.fromfile(str(run.report_dir / "junit.xml"))))
    assert suite.tests == 2 and suite.failures == 0
    assert "RuntimeClass handler check: \u2714 PASSED" in visible_text((run.report_dir / "report.html").read_text()).text


def test_nightly_defaults_to_a_report_dir_where_it_runs(tmp_path):
    run = run_playbook(None, "--limit", "localhost,gpu-node-01", cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:]
    assert sorted(path.name for path in (tmp_path / "runtime-gate-report").iterdir()) == ["junit.xml", "metrics.prom", "report.html", "report.json"]


def test_a_pattern_that_matches_no_host_fails_with_a_report(tmp_path):
    run = run_playbook(tmp_path / "out", "-e", "runtime_gate_hosts=no_such_group")
    assert run.returncode == 2, run.stdout[-3000:]
    report = run.report
    validate(report)
    assert report["passed"] is False and report["hosts"] == {} and report["sources"]["cluster"]["read"] is True
    assert [finding["code"] for finding in report["fleet_findings"]] == ["NO_HOST_JUDGED"]


def check_demo(returncode, report_dir):
    """inventory/demo/check_verdicts.py as `make demo` calls it, with the report directory."""
    return subprocess.run(
        [sys.executable, str(DEMO / "check_verdicts.py"), str(returncode), str(report_dir / "demo-verdicts.json"),
         str(DEMO / "expected-verdicts.yml"), str(report_dir)],
        capture_output=True, text=True, check=False,
    )


def test_make_demo_checks_the_reports_and_says_where_they_are(demo_run, tmp_path):
    checked = check_demo(demo_run.returncode, demo_run.report_dir)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.splitlines()[-1] == (
        f"demo: reports in {demo_run.report_dir}/: report.json, junit.xml, report.html, metrics.prom "
        f"(open file://{demo_run.report_dir}/report.html in a browser)"
    )
    green = tmp_path / "out"
    shutil.copytree(demo_run.report_dir, green)
    report = json.loads((green / "report.json").read_text())
    report["passed"] = True
    (green / "report.json").write_text(json.dumps(report))
    (green / "junit.xml").unlink()
    refused = check_demo(demo_run.returncode, green)
    assert refused.returncode == 1
    assert "lacks junit.xml" in refused.stderr
    (green / "junit.xml").write_text("<testsuites/>")
    refused = check_demo(demo_run.returncode, green)
    assert refused.returncode == 1 and "report.json says the broken demo fleet passed" in refused.stderr
