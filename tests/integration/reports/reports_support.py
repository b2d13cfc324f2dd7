"""Real runs of the nightly playbook over the demo fleet, and a real headless Chromium to look at report.html."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from xml.etree import ElementTree

import pytest
import yaml
from support.paths import REPO_ROOT
from support.tools import require_command

DEMO = REPO_ROOT / "inventory" / "demo"
NIGHTLY_PLAYBOOK = REPO_ROOT / "playbooks" / "nightly.yml"
CROSSCHECK_PLAYBOOK = REPO_ROOT / "playbooks" / "crosscheck.yml"
SCHEMA_PATH = REPO_ROOT / "docs" / "report.schema.json"
BIN = Path(sys.executable).parent


@dataclass
class ReportRun:
    returncode: int
    stdout: str
    report_dir: Path

    @property
    def report(self) -> dict:
        return json.loads((self.report_dir / "report.json").read_text(encoding="utf-8"))


def run_playbook(report_dir, *extra, playbook=NIGHTLY_PLAYBOOK, env=None, cwd=REPO_ROOT) -> ReportRun:
    """ansible-playbook over the demo inventory, reports into ``report_dir`` (None: the playbook's default)."""
    report_args = ["-e", f"runtime_gate_report_dir={report_dir}"] if report_dir is not None else []
    completed = subprocess.run(
        [BIN / "ansible-playbook", "-i", str(DEMO / "hosts.yml"), str(playbook), *report_args, *extra],
        cwd=cwd, env={**os.environ, "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"), **(env or {})},
        capture_output=True, text=True, check=False, timeout=300,
    )
    return ReportRun(completed.returncode, completed.stdout + completed.stderr, Path(report_dir or cwd / "runtime-gate-report"))


def expected_demo_verdicts() -> dict:
    """inventory/demo/expected-verdicts.yml: host → (verdict, missing handlers)."""
    hosts = yaml.safe_load((DEMO / "expected-verdicts.yml").read_text(encoding="utf-8"))["hosts"]
    return {host: (want["verdict"], want["missing_handlers"]) for host, want in hosts.items()}


def demo_runtimeclasses() -> dict:
    """RuntimeClass name → object, straight from the demo's cluster.yaml (not through the collection)."""
    items = yaml.safe_load((DEMO / "cluster.yaml").read_text(encoding="utf-8"))["items"]
    return {item["metadata"]["name"]: item for item in items if item["kind"] == "RuntimeClass"}


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> ReportRun:
    """The whole demo fleet through playbooks/nightly.yml as `make demo` runs it, once for the module."""
    out = tmp_path_factory.mktemp("reports") / "out"
    run = run_playbook(out, "-e", f"runtime_gate_verdicts_file={out / 'demo-verdicts.json'}")
    assert (run.report_dir / "report.json").is_file(), run.stdout[-3000:]
    return run


@pytest.fixture(scope="session")
def chromium() -> str:
    return require_command("chromium", "chromium")


def chromium_run(chromium_bin, html_path: Path, work_dir: Path, *args) -> subprocess.CompletedProcess:
    """Headless Chromium on a file:// URL; its profile and caches stay in ``work_dir`` (outside the repo)."""
    profile = work_dir / "chromium-profile"
    env = {**os.environ, "HOME": str(work_dir), "XDG_CONFIG_HOME": str(work_dir / "config"), "XDG_CACHE_HOME": str(work_dir / "cache")}
    completed = subprocess.run(
        [chromium_bin, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", f"--user-data-dir={profile}",
         "--window-size=1400,2400", *args, html_path.resolve().as_uri()],
        env=env, capture_output=True, text=True, check=False, timeout=120,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    return completed


class VisibleText(HTMLParser):
    """The text a reader sees in a DOM dump: no <style>/<head>/<script> contents, nothing of a closed <details>
    but its <summary>; table rows kept apart."""

    HIDDEN = frozenset({"style", "script", "head", "title"})

    def __init__(self):
        super().__init__()
        self.hidden_depth = 0
        self.chunks = []
        self.rows = []  # each table row's cell texts
        self.current_row = None
        self.current_cell = None
        self.details_open = []  # one entry per enclosing <details>: has it the `open` attribute?
        self.in_summary = False

    def handle_starttag(self, tag, attrs):
        if tag in self.HIDDEN:
            self.hidden_depth += 1
        elif tag == "details":
            self.details_open.append("open" in dict(attrs))
        elif tag == "summary":
            self.in_summary = True
        elif tag == "tr":
            self.current_row = []
        elif tag in ("td", "th") and self.current_row is not None:
            self.current_cell = []
        elif tag == "br":
            self.handle_data(" ")

    def handle_endtag(self, tag):
        if tag in self.HIDDEN:
            self.hidden_depth -= 1
        elif tag == "details" and self.details_open:
            self.details_open.pop()
        elif tag == "summary":
            self.in_summary = False
        elif tag in ("td", "th") and self.current_row is not None and self.current_cell is not None:
            self.current_row.append(" ".join("".join(self.current_cell).split()))
            self.current_cell = None
        elif tag == "tr" and self.current_row is not None:
            self.rows.append(self.current_row)
            self.current_row = None

    def handle_data(self, data):
        if self.hidden_depth or (not all(self.details_open) and not self.in_summary):
            return
        self.chunks.append(data)
        if self.current_cell is not None:
            self.current_cell.append(data)

    @property
    def text(self) -> str:
        return " ".join(" ".join(self.chunks).split())


def junit_system_out(junit_path: Path) -> str:
    """The testsuite's <system-out> text (junitparser reads only the testcases')."""
    suite = ElementTree.parse(junit_path).getroot().find("testsuite")
    return suite.findtext("system-out") or ""


def visible_text(dom: str) -> VisibleText:
    parser = VisibleText()
    parser.feed(dom)
    parser.close()
    return parser
