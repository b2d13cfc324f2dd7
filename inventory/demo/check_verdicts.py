"""check_verdicts.py PLAYBOOK_RC VERDICTS_JSON EXPECTED_YML [REPORT_DIR] — did the demo end as documented?

The demo fleet is broken on purpose, so ansible-playbook must exit 2 (hosts failed) having written the
verdicts of every host, and they must equal inventory/demo/expected-verdicts.yml: verdict and missing handlers,
and where the expectation lists them, the codes of the host's findings (`finding_codes`, sorted) and of the
explanation of each missing handler (`missing_explained`). With REPORT_DIR, the
reports must be there too: report.json holding the same verdicts and a failed run, junit.xml, report.html,
metrics.prom.
Exit 0 when all holds, 1 otherwise, with the differences on stderr.
"""
import json
import os
import sys

import yaml

EXPECTED_PLAYBOOK_RC = 2  # ansible-playbook: "one or more hosts failed"


REPORT_FILES = ("report.json", "junit.xml", "report.html", "metrics.prom")


def report_problems(report_dir, expected):
    """What is wrong with the reports in ``report_dir`` for a run that should end with ``expected``."""
    absent = [name for name in REPORT_FILES if not os.path.isfile(os.path.join(report_dir, name))]
    if absent:
        return [f"{report_dir} lacks {', '.join(absent)}"]
    with open(os.path.join(report_dir, "report.json"), encoding="utf-8") as handle:
        report = json.load(handle)
    problems = [] if report["passed"] is False else ["report.json says the broken demo fleet passed"]
    reported = {host: (entry["status"], entry["missing_handlers"]) for host, entry in report["hosts"].items()}
    if reported != {host: (want["status"], want["missing_handlers"]) for host, want in expected.items()}:
        problems.append(f"report.json's verdicts differ from the expected ones: {reported}")
    return problems


def finding_problems(host, got, want):
    """Differences between a host's findings and the expected codes (only the keys the expectation has)."""
    problems = []
    if "finding_codes" in want:
        codes = sorted({finding["code"] for finding in got.get("findings") or []})
        if codes != sorted(want["finding_codes"]):
            problems.append(f"{host}: findings {codes}, expected {sorted(want['finding_codes'])}")
    if "missing_explained" in want:
        explained = {handler: sorted(codes) for handler, codes in (got.get("missing_explained") or {}).items()}
        if explained != {handler: sorted(codes) for handler, codes in want["missing_explained"].items()}:
            problems.append(f"{host}: missing handlers explained by {explained}, expected {want['missing_explained']}")
    return problems


def main(playbook_rc, verdicts_path, expected_path, report_dir=None):
    problems = []
    if int(playbook_rc) != EXPECTED_PLAYBOOK_RC:
        problems.append(f"ansible-playbook exited {playbook_rc}, expected {EXPECTED_PLAYBOOK_RC} (hosts failed by their verdicts)")
    try:
        with open(verdicts_path, encoding="utf-8") as handle:
            verdicts = json.load(handle)["hosts"]
    except (OSError, ValueError, KeyError) as error:
        print(f"demo: no verdicts in {verdicts_path}: {error}", file=sys.stderr)
        return 1
    with open(expected_path, encoding="utf-8") as handle:
        expected = yaml.safe_load(handle)["hosts"]
    for host in sorted(set(expected) | set(verdicts)):
        want, got = expected.get(host), verdicts.get(host)
        if want is None or got is None:
            problems.append(f"{host}: {'not expected' if want is None else 'no verdict'}")
        elif (got["status"], got["missing_handlers"]) != (want["status"], want["missing_handlers"]):
            problems.append(f"{host}: got {got['status']} {got['missing_handlers']}, expected {want['status']} {want['missing_handlers']}")
        else:
            problems += finding_problems(host, got, want)
    if report_dir:
        problems += report_problems(report_dir, expected)
    for problem in problems:
        print(f"demo: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"demo: all {len(expected)} verdicts and their findings as documented (docs/usage.md, 'The demo fleet'); verdicts in {verdicts_path}")
    if report_dir:
        where = os.path.abspath(report_dir)
        print(f"demo: reports in {where}/: {', '.join(REPORT_FILES)} (open file://{where}/report.html in a browser)")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
