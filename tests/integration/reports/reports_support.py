"""Real runs of the nightly playbook over the demo fleet, and a real headless Chromium to look at report.html."""
from __future__ import annotations

import html
import json
import os
import random
import subprocess
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from xml.etree import ElementTree

import pytest
import yaml
from support.paths import REPO_ROOT
from support.playbooks import ansible_playbook
from support.tools import require_command

DEMO = REPO_ROOT / "inventory" / "demo"
NIGHTLY_PLAYBOOK = REPO_ROOT / "playbooks" / "nightly.yml"
CROSSCHECK_PLAYBOOK = REPO_ROOT / "playbooks" / "crosscheck.yml"
SCHEMA_PATH = REPO_ROOT / "docs" / "report.schema.json"


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
    completed = ansible_playbook(playbook, DEMO / "hosts.yml", *report_args, *extra, env=env, cwd=cwd)
    return ReportRun(completed.returncode, completed.stdout + completed.stderr, Path(report_dir or cwd / "runtime-gate-report"))


def expected_demo_verdicts() -> dict:
    """inventory/demo/expected-verdicts.yml: host → (verdict, missing handlers)."""
    hosts = yaml.safe_load((DEMO / "expected-verdicts.yml").read_text(encoding="utf-8"))["hosts"]
    return {host: (want["status"], want["missing_handlers"]) for host, want in hosts.items()}


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


def chromium_run(chromium_bin, html_path: Path, work_dir: Path, *args, window="1400,2400", fragment="") -> subprocess.CompletedProcess:
    """Headless Chromium on a file:// URL (``#fragment`` appended); its profile and caches stay in ``work_dir``
    (outside the repo). ``window``: the viewport, ``width,height`` (a --screenshot is exactly that size)."""
    profile = work_dir / "chromium-profile"
    env = {**os.environ, "HOME": str(work_dir), "XDG_CONFIG_HOME": str(work_dir / "config"), "XDG_CACHE_HOME": str(work_dir / "cache")}
    completed = subprocess.run(
        [chromium_bin, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", f"--user-data-dir={profile}",
         f"--window-size={window}", *args, html_path.resolve().as_uri() + (f"#{fragment}" if fragment else "")],
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
        self.summary_depth = None  # len(details_open) while inside a <summary>

    def handle_starttag(self, tag, attrs):
        if tag in self.HIDDEN:
            self.hidden_depth += 1
        elif tag == "details":
            self.details_open.append("open" in dict(attrs))
        elif tag == "summary":
            self.summary_depth = len(self.details_open)
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
            self.summary_depth = None
        elif tag in ("td", "th") and self.current_row is not None and self.current_cell is not None:
            self.current_row.append(" ".join("".join(self.current_cell).split()))
            self.current_cell = None
        elif tag == "tr" and self.current_row is not None:
            self.rows.append(self.current_row)
            self.current_row = None

    def handle_data(self, data):
        if self.hidden_depth or not self._shown():
            return
        self.chunks.append(data)
        if self.current_cell is not None:
            self.current_cell.append(data)

    def _shown(self):
        """Every enclosing <details> open, but for the innermost one's <summary>."""
        if self.summary_depth is not None and self.summary_depth == len(self.details_open):
            return all(self.details_open[:-1])
        return all(self.details_open)

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


# Measures the page as a reader gets it, then with every toggle open; writes JSON into <pre id="probe">.
PROBE_SCRIPT = """
(function () {
  function rendered(selector) {
    return Array.from(document.querySelectorAll(selector)).filter(function (el) { return el.getClientRects().length; });
  }
  function broken(selector) {
    return rendered(selector).filter(function (el) { return el.getClientRects().length !== 1; })
      .map(function (el) { return el.textContent.trim(); });
  }
  function visible(el) {  // not hidden by the filter, and not inside a closed toggle (its summary aside)
    for (var node = el; node; node = node.parentElement) {
      if (node.hidden) { return false; }
      if (node.tagName === "DETAILS" && !node.open && !(node.querySelector("summary") || node).contains(el)) { return false; }
    }
    return true;
  }
  function shown(selector) { return Array.from(document.querySelectorAll(selector)).filter(visible); }
  var result = {width: window.innerWidth, collapsed_height: document.documentElement.scrollHeight,
                open_details: document.querySelectorAll("details[open]").length};
  document.querySelectorAll("details").forEach(function (el) { el.open = true; });
  result.expanded_height = document.documentElement.scrollHeight;
  result.page_width = document.documentElement.scrollWidth;
  // the viewport less its scrollbar, and every element whose right edge passes it outside a box that scrolls
  result.client_width = document.documentElement.clientWidth;
  function scrolls(el) {
    for (var node = el.parentElement; node && node !== document.body; node = node.parentElement) {
      if (["auto", "scroll", "hidden"].indexOf(getComputedStyle(node).overflowX) >= 0) { return true; }
    }
    return false;
  }
  result.beyond = Array.from(document.querySelectorAll("body *")).filter(function (el) {
    return el.getClientRects().length && el.getBoundingClientRect().right > result.client_width + 0.5 && !scrolls(el);
  }).map(function (el) { return el.tagName + " " + el.textContent.trim().slice(0, 80); });
  result.tables_right = Array.from(document.querySelectorAll("section table")).map(function (el) {
    return [el.closest("section").id, Math.ceil(el.getBoundingClientRect().right)];
  });
  result.badges = rendered(".badge").length;
  result.names = rendered(".name, .namebox li").length;
  result.wrapped = broken(".badge").concat(broken(".name, .namebox li"));
  document.querySelectorAll("details").forEach(function (el) { el.open = false; });
  var box = document.getElementById("filter");
  result.filters = {};
  (window.PROBE_FILTERS || []).forEach(function (query) {
    box.value = query;
    box.dispatchEvent(new Event("input"));
    result.filters[query] = {
      rows: shown("#matrix tbody").length,
      hosts: shown("#matrix [data-host]").map(function (el) { return el.textContent.trim(); }),
    };
  });
  box.value = "";
  box.dispatchEvent(new Event("input"));
  var out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify(result);
  document.body.appendChild(out);
})();
"""


def chromium_probe(chromium_bin, html_path: Path, work_dir: Path, *, width: int, filters=()) -> dict:
    """report.html as Chromium lays it out ``width`` px wide (a copy with the probe script appended): page height
    collapsed and expanded, page width, badges and names broken over more than one line, what each filter shows."""
    probed = work_dir / f"probe-{width}-{html_path.name}"
    setup = f"<script>window.PROBE_FILTERS = {json.dumps(list(filters))};</script>"
    probed.write_text(html_path.read_text(encoding="utf-8").replace("</body>", f"{setup}<script>{PROBE_SCRIPT}</script></body>"), encoding="utf-8")
    dom = chromium_run(chromium_bin, probed, work_dir, "--dump-dom", window=f"{width},1000").stdout
    start = dom.index('<pre id="probe">') + len('<pre id="probe">')
    return json.loads(html.unescape(dom[start:dom.index("</pre>", start)]))


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk."""
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n" and header[12:16] == b"IHDR", path
    return int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")


# --------------------------------------------------------------------------------------------------
# A synthetic fleet of any size, judged by the collection's own path (judge → collect_verdicts → fleet_view):
# GPU nodes that serve everything, CPU nodes, nodes whose nvidia-cdi is configured nowhere, whose CDI runtime's
# binary is gone, whose dump was judged without its host root, and hosts never judged.

RUNC = {"runtime_type": "io.containerd.runc.v2"}
CDI_BINARY = "/usr/bin/nvidia-container-runtime.cdi"
FLEET_RUNTIMECLASSES = [
    {"name": "runc", "handler": "runc", "overhead_pod_fixed": None, "node_selector": None, "tolerations": []},
    {"name": "nvidia-gpu", "handler": "nvidia", "overhead_pod_fixed": {"cpu": "250m"}, "node_selector": {"gpu": "true"}, "tolerations": []},
    {"name": "nvidia-gpu-cdi", "handler": "nvidia-cdi", "overhead_pod_fixed": None, "node_selector": {"gpu": "true"}, "tolerations": []},
    # a typo no node is selected for: HANDLER_SERVED_NOWHERE, "did you mean `nvidia`?"
    {"name": "nvidia-typo", "handler": "nvdia", "overhead_pod_fixed": None, "node_selector": {"pool": "canary"}, "tolerations": []},
]
ROOT_CONFIG = """version = 2
[plugins."io.containerd.grpc.v1.cri".containerd]
default_runtime_name = "runc"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
runtime_type = "io.containerd.runc.v2"
"""
# kind → share of the fleet (the rest are healthy GPU nodes); each kind gets at least one host.
FLEET_MIX = (("cpu", 0.2), ("not_configured", 0.12), ("binary_missing", 0.06), ("files_not_examined", 0.03), ("unjudged", 0.04))


def fleet_kinds(size: int) -> list[str]:
    kinds = [kind for kind, share in FLEET_MIX for _copy in range(max(1, round(size * share)))]
    return (kinds + ["gpu"] * size)[:size] if len(kinds) < size else kinds[:size]


def _fleet_facts(kind):
    binaries = {"runc": {"exists": True, "executable": True}, CDI_BINARY: {"exists": True, "executable": True}}
    runtimes = {"runc": RUNC, "nvidia": RUNC, "nvidia-cdi": dict(RUNC, binary_name=CDI_BINARY)}
    facts = {"default_runtime_name": "runc", "containerd_version": "1.7.27", "binaries": binaries, "runtimes": runtimes}
    if kind == "cpu":
        facts["runtimes"] = {"runc": RUNC}
    elif kind == "not_configured":
        facts["runtimes"] = {"runc": RUNC, "nvidia": RUNC}
        facts["config_files"] = [{"path": "/etc/containerd/config.toml", "role": "root", "text": ROOT_CONFIG}]
    elif kind == "binary_missing":
        binaries[CDI_BINARY] = {"exists": False}
    elif kind == "files_not_examined":
        facts["runtimes"] = {"runc": RUNC, "nvidia": RUNC}
        facts["files_examined"] = False
    return facts


def synthetic_fleet(size: int, name=lambda index: f"gpu-node-{index:03d}"):
    """``(verdicts, fleet, kinds)`` for ``size`` hosts, through collect_verdicts and fleet_view."""
    # Imported here: this module is loaded by conftest.py, before pytest-ansible sets up the collection loader.
    # pylint: disable=import-outside-toplevel
    from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.summary import collect_verdicts, fleet_view
    from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict import judge_and_explain

    kinds = {}
    registered = {}
    nodes = []
    mixed = fleet_kinds(size)
    random.Random(14).shuffle(mixed)  # failing hosts spread over the names, as in a real fleet
    for index, kind in enumerate(mixed, start=1):
        host = name(index)
        kinds[host] = kind
        labels = {} if kind == "cpu" else {"gpu": "true"}
        nodes.append({"name": host, "labels": labels})
        registered[host] = None if kind == "unjudged" else judge_and_explain(_fleet_facts(kind), FLEET_RUNTIMECLASSES, node_name=host, node_labels=labels)
    cluster = {"runtimeclasses": FLEET_RUNTIMECLASSES, "nodes": nodes, "pods": [], "api_requests": 0,
               "source": {"type": "file", "path": "/srv/cluster.yaml"}}
    verdicts = collect_verdicts(registered)
    return verdicts, fleet_view(verdicts, cluster), kinds
