"""report.html: the report object (``_report.build_report``) as one self-contained page that reads at fleet size.

Hosts that fail the same way (same verdict, missing handlers, matrix row, finding codes and explanation) are one
row with a count; their names and each host's lines, findings and facts are behind collapsed toggles, failing
groups first. One small inline script filters rows by host, handler or code and opens a linked host; without
it (or without network, which the page never uses) everything but the filter still works. Every state has a
colour AND a symbol and a word in the legend, so the page reads in greyscale. Every value is escaped; `code`
spans in finding texts become <code>.
"""

import html
import re

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._printable import printable_lines
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._explain.findings import explanation_lines
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.vocabulary import (
    MISSING,
    NOT_REACHED,
    OK,
    STATUS_KEY,
    UNKNOWN,
    status_of,
)

# state → (symbol, label, CSS class); the matrix states and the verdicts share the look.
LOOK = {
    "served": ("\u2714", "served", "good"),
    "missing": ("\u2718", "missing", "bad"),
    "not_required": ("\u2013", "not required", "none"),
    "unknown": ("?", "unknown", "unknown"),
    "not_reached": ("\u2026", "not reached", "unknown"),
    OK: ("\u2714", OK, "good"),
    MISSING: ("\u2718", MISSING, "bad"),
    UNKNOWN: ("?", UNKNOWN, "unknown"),
    NOT_REACHED: ("\u2026", NOT_REACHED, "unknown"),
    "error": ("\u2718", "error", "bad"),
    "warning": ("!", "warning", "warn"),
}
GROUP_ORDER = {MISSING: 0, UNKNOWN: 1, NOT_REACHED: 2, OK: 3}  # failing groups first
INLINE_NAMES = 3
DOT = "\u00b7"  # a RuntimeClass cell names up to this many nodes; more become a count and a collapsed list

STYLE = """
body { font: 14px/1.45 system-ui, "DejaVu Sans", sans-serif; margin: 1.5em; color: #1f2328; }
h1 { font-size: 1.5em; margin: 0 0 .3em; } h2 { font-size: 1.2em; margin: 1.4em 0 .4em; }
table { border-collapse: collapse; } th, td { border: 1px solid #d0d7de; padding: .25em .6em; text-align: left; vertical-align: top; }
.scroll { overflow-x: auto; max-width: 100%; }
.matrix td.cell { text-align: center; min-width: 3em; } .matrix th .meta { font-weight: normal; font-size: .85em; }
.matrix td.explain { border-top: none; padding-bottom: .5em; } .matrix td.hosts { min-width: 7em; }
.matrix tbody { border-top: 2px solid #8c959f; }
.good { background: #dafbe1; color: #116329; } .bad { background: #ffd8d3; color: #a40e26; font-weight: bold; }
.none { background: #f6f8fa; color: #59636e; } .unknown { background: #fff1b8; color: #7a4a00; font-weight: bold; }
.warn { background: #fff1b8; color: #7a4a00; }
.badge, .name, code, summary { white-space: nowrap; } .wrap { white-space: normal; } .badge { padding: 0 .3em; border-radius: 3px; }
summary, summary code, #runtimeclasses td code { white-space: normal; overflow-wrap: anywhere; }
.sym { font-size: 1.1em; } .legend .badge { border: 1px solid #d0d7de; margin-right: .5em; }
.finding { margin: .3em 0; padding: .2em .6em; border-left: 4px solid #d0d7de; list-style: none; }
.finding.bad { border-left-color: #a40e26; font-weight: normal; } .finding.warn { border-left-color: #bf8700; }
.finding.bad, .finding.warn { background: none; color: #1f2328; }
code { font-family: "DejaVu Sans Mono", monospace; font-size: .95em; background: #f6f8fa; padding: 0 .2em; }
details { margin: .2em 0; } summary { cursor: pointer; } details.host, details.group { border: 1px solid #d0d7de; padding: .2em .6em; }
.namebox { max-height: 12em; max-width: 24em; overflow: auto; margin: .2em 0; padding: 0; list-style: none; }
.namebox li { white-space: nowrap; }
ul { padding-left: 1.2em; margin: .2em 0; } .meta { color: #59636e; } .explain ul { padding-left: 0; list-style: none; }
#filter { font: inherit; width: 28em; max-width: 90%; padding: .2em .4em; }
"""

# Filters rows by host name, handler or finding code (every word must match); opens a host reached by a link.
SCRIPT = """
(function () {
  var box = document.getElementById("filter"), status = document.getElementById("filter-status");
  var groups = document.querySelectorAll("[data-filter]");
  function has(text, words) { return words.every(function (word) { return text.indexOf(word) >= 0; }); }
  function apply() {
    var words = box.value.toLowerCase().split(/\\s+/).filter(Boolean), shown = 0, rows = 0;
    groups.forEach(function (group) {
      var text = group.getAttribute("data-filter"), own = has(text, words), hits = 0;
      group.querySelectorAll("[data-host]").forEach(function (host) {
        var show = own || has(text + " " + host.getAttribute("data-host"), words);
        host.hidden = !show; hits += show ? 1 : 0;
      });
      group.hidden = !(own || hits);
      group.querySelectorAll("details.members").forEach(function (members) {
        if (words.length && !own && hits) { if (!members.open) { members.open = true; members.dataset.filterOpened = "1"; } }
        else if (members.dataset.filterOpened) { members.open = false; delete members.dataset.filterOpened; }
      });
      if (group.tagName === "TBODY") { rows += 1; shown += group.hidden ? 0 : 1; }
    });
    status.textContent = words.length ? shown + " of " + rows + " rows match" : "";
  }
  function reveal() {
    var target = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
    for (var node = target; node; node = node.parentElement) { if (node.tagName === "DETAILS") { node.open = true; } }
    if (target) { target.scrollIntoView(); }
  }
  box.addEventListener("input", apply);
  window.addEventListener("hashchange", reveal);
  reveal();
})();
"""


def escape(text, quote=True):
    """HTML-escaped, control characters and non-characters written as visible escapes first (``_printable``)."""
    return html.escape(printable_lines(text), quote)


def render_html(report):
    counts = report["counts"]
    outcome = "PASSED" if report["passed"] else "FAILED"
    count_text = ", ".join(f"{count} {verdict}" for verdict, count in counts.items())
    groups = host_groups(report)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">',
        f"<title>runtime_gate report: {outcome}, {count_text} of {len(report['hosts'])} hosts</title>",
        f"<style>{STYLE}</style></head><body>",
        f'<h1>RuntimeClass handler check: {_badge(OK if report["passed"] else MISSING, outcome)}</h1>',
        f'<p>{count_text} of {len(report["hosts"])} hosts, in {len(groups)} group(s) by outcome. '
        f'<span class="meta">Generated {escape(report["generated_at"])}, run {escape(report["run_id"])}.</span></p>',
        _sources(report["sources"]),
        _findings_section("Fleet findings", "fleet-findings", report["fleet_findings"]),
        _findings_section("Overhead warnings", "overhead-warnings", report["overhead_findings"]),
        _changes(report),
        '<p><label for="filter">Filter by host, handler or code:</label> '
        '<input id="filter" type="search" placeholder="e.g. gpu-node-07 nvidia-cdi" autocomplete="off"> '
        '<span id="filter-status" class="meta"></span></p>',
        _matrix(report["matrix"], groups, report["runtimeclasses"]),
        _runtimeclasses(report["runtimeclasses"]),
        _hosts(groups),
        f"<script>{SCRIPT}</script>",
        "</body></html>",
    ]
    return "\n".join(part for part in parts if part) + "\n"


def host_groups(report):
    """The hosts grouped by how they fail: ``[{"hosts", "entry": the first host's, "entries": by host, "cells"}]``.

    Hosts are alike when their verdict, missing handlers, matrix row, finding codes and explanation of each
    missing handler are; failing groups first (MISSING, then UNKNOWN, then NOT_REACHED), the biggest first, then by first host.
    """
    groups = {}
    for host, entry in report["hosts"].items():
        cells = report["matrix"]["rows"].get(host, {})
        signature = (
            status_of(entry),
            tuple(entry["missing_handlers"] or []),
            tuple(sorted(cells.items())),
            tuple(sorted({finding["code"] for finding in entry["findings"] or []})),
            tuple((handler, tuple(codes)) for handler, codes in sorted((entry["missing_explained"] or {}).items())),
            entry.get("files_examined") is False,
        )
        group = groups.setdefault(signature, {"hosts": [], "entry": entry, "entries": {}, "cells": cells})
        group["hosts"].append(host)
        group["entries"][host] = entry
    return sorted(groups.values(), key=lambda group: (GROUP_ORDER.get(status_of(group["entry"]), 4), -len(group["hosts"]), group["hosts"][0]))


def _text(text):
    """Escaped text with `code` spans as <code> (finding messages and remedies quote names that way)."""
    pieces = re.split(r"`([^`\n]+)`", str(text))
    return "".join(f"<code>{escape(piece)}</code>" if index % 2 else escape(piece) for index, piece in enumerate(pieces))


def _badge(state, text=None):
    symbol, label, css = LOOK[state]
    return f'<span class="badge {css}"><span class="sym">{symbol}</span> {escape(text or label)}</span>'


def _sources(sources):
    cluster = sources["cluster"]
    if cluster["read"]:
        where = escape(cluster["server"] or cluster["path"] or "-")
        counts = ", ".join(f"{number} {kind}" for kind, number in (cluster["counts"] or {}).items())
        cluster_text = f"{escape(cluster['type'] or '')} {where} ({escape(counts)})"
    else:
        cluster_text = f'{_badge(UNKNOWN, "not read")}: {escape(cluster["error"] or "")}'
    inventory = escape(", ".join(sources["inventory"]) or "-")
    return f'<p class="meta">Cluster: {cluster_text}<br>Inventory: {inventory}</p>'


def _findings_section(title, anchor, findings):
    if not findings:
        return ""
    return f'<section id="{anchor}"><h2>{escape(title)}</h2>{_finding_list(findings)}</section>'


def _finding_list(findings, *, evidence=False):
    items = []
    for finding in findings:
        symbol, label, css = LOOK[finding["severity"]]
        where = f' on <span class="name"><b>{escape(finding["host"])}</b></span>' if finding.get("host") else ""
        handlers = f" (handlers: {escape(', '.join(finding['handlers']))})" if finding.get("handlers") else ""
        evidence_text = ", ".join(f"{key}={_evidence_text(value)}" for key, value in (finding.get("evidence") or {}).items())
        items.append(
            f'<li class="finding {css}"><span class="badge {css}"><span class="sym">{symbol}</span> {label.upper()}</span> '
            f'<code>{escape(finding["code"])}</code>{where}{handlers}: {_text(finding["message"])}<br>'
            f'<span class="remedy">Remedy: {_text(finding["remedy"])}</span>'
            + (f'<br><span class="meta">Evidence: {escape(evidence_text)}</span>' if evidence and evidence_text else "")
            + "</li>"
        )
    return f"<ul>{''.join(items)}</ul>"


def _evidence_text(value):
    return "[" + ", ".join(str(item) for item in value) + "]" if isinstance(value, list) else str(value)


def _changes(report):
    previous, changed = report["previous"], report["changed_hosts"]
    if previous is None:
        return '<section id="changes"><h2>Changed since the previous run</h2><p>No previous report to compare with.</p></section>'
    if changed is None:
        body = f"<p>The previous report could not be compared: {escape(previous['error'] or '')}</p>"
    elif not changed:
        body = "<p>No host changed.</p>"
    else:
        moves = {}
        for entry in changed:
            moves.setdefault((_outcome(entry["previous"]), _outcome(entry["current"])), []).append(entry["host"])
        rows = "".join(
            f"<tr><td>{before}</td><td>{now}</td><td>{_names(hosts, 'host')}</td></tr>"
            for (before, now), hosts in sorted(moves.items(), key=lambda item: -len(item[1]))
        )
        body = f'<div class="scroll"><table><tr><th>before</th><th>now</th><th>hosts</th></tr>{rows}</table></div>'
    since = escape(previous["generated_at"] or "unknown time")
    return f'<section id="changes"><h2>Changed since the previous run ({since})</h2>{body}</section>'


def _outcome(outcome):
    if outcome is None:
        return "not checked"
    missing = escape(", ".join(outcome["missing_handlers"]))
    status = status_of(outcome)
    if status is None:
        return escape(str(outcome.get(STATUS_KEY)))
    return _badge(status) + (f' <span class="name">{missing}</span>' if missing else "")


def _names(names, noun, *, link=False, state=None):
    """A few names inline; more as a count with the list behind a collapsed toggle (a scrolling box).
    ``state`` (a LOOK key): the count is a badge of that state."""
    if not names:
        return "-"

    def name(item):
        return f'<a href="#host-{escape(item)}">{escape(item)}</a>' if link else escape(item)
    if len(names) <= INLINE_NAMES:
        return ", ".join(f'<span class="name">{name(item)}</span>' for item in names)
    items = "".join(f"<li>{name(item)}</li>" for item in names)
    count = _badge(state, f"{len(names)} {noun}s") if state else f'<span class="count">{len(names)} {noun}s</span>'
    return f'<details class="members"><summary>{count}</summary><ul class="namebox">{items}</ul></details>'


def _classes_of(handler, runtimeclasses):
    names = [runtimeclass["name"] for runtimeclass in runtimeclasses if runtimeclass["handler"] == handler]
    label = "RuntimeClass " + ", ".join(f'<span class="name">{escape(name)}</span>' for name in names) if names else "default runtime, no RuntimeClass"
    return f'<br><span class="meta">{label}</span>'


def _search_text(group):
    entry = group["entry"]
    words = [status_of(entry), *(entry["missing_handlers"] or []), *(finding["code"] for finding in entry["findings"] or [])]
    words += [code for codes in (entry["missing_explained"] or {}).values() for code in codes]
    return escape(" ".join(words).lower())


def _host_search_text(host, entry):
    return escape(" ".join(sorted({host, entry["node"] or host})).lower())


def _matrix(matrix, groups, runtimeclasses):
    head = "".join(f"<th>{escape(handler)}{_classes_of(handler, runtimeclasses)}</th>" for handler in matrix["handlers"])
    bodies = []
    for group in groups:
        entry, hosts = group["entry"], group["hosts"]
        symbols = "".join(
            f'<td class="cell {LOOK[state][2]}" title="{escape(handler)}: {LOOK[state][1]}"><span class="sym">{LOOK[state][0]}</span></td>'
            for handler, state in group["cells"].items()
        )
        if len(hosts) <= INLINE_NAMES:
            members = ", ".join(
                f'<span class="name" data-host="{_host_search_text(host, group["entries"][host])}"><a href="#host-{escape(host)}">{escape(host)}</a></span>'
                for host in hosts
            )
        else:
            items = "".join(
                f'<li data-host="{_host_search_text(host, group["entries"][host])}"><a href="#host-{escape(host)}">{escape(host)}</a></li>' for host in hosts
            )
            members = (f'<details class="members"><summary><span class="count">{len(hosts)} hosts</span></summary>'
                       f'<ul class="namebox">{items}</ul></details>')
        bodies.append(
            f'<tbody data-filter="{_search_text(group)}"><tr><td>{_badge(status_of(entry))}</td><td class="hosts">{members}</td>'
            f'{symbols}</tr>{_explanation_row(group)}</tbody>'
        )
    legend = " ".join(_badge(state) for state in ("served", "missing", "not_required", "unknown"))
    return (
        f'<section id="matrix"><h2>Fleet matrix: hosts \u00d7 handlers, alike hosts grouped</h2><div class="scroll">'
        f'<table class="matrix"><thead><tr><th>verdict</th><th>hosts</th>{head}</tr></thead>{"".join(bodies)}</table></div>'
        f'<p class="legend">Legend: {legend}</p></section>'
    )


def _explanation_row(group):
    explanation = _group_explanation(group)
    if not explanation:
        return ""
    return f'<tr><td class="explain" colspan="{2 + len(group["cells"])}">{explanation}</td></tr>'


def _group_explanation(group):
    """The console's lines for the group's first host: MISSING=/UNKNOWN= lines, each missing handler's explanation,
    the findings (as on that host; each host's own are in its block under Hosts)."""
    entry, hosts = group["entry"], group["hosts"]
    if status_of(entry) in (UNKNOWN, NOT_REACHED):
        reasons = sorted({line for other in group["entries"].values() for line in other["lines"]})
        shown = "".join(f'<li><code class="wrap">{escape(line)}</code></li>' for line in reasons[:INLINE_NAMES])
        more = f'<li class="meta">and {len(reasons) - INLINE_NAMES} other reasons (each host\'s under Hosts)</li>' if len(reasons) > INLINE_NAMES else ""
        return f"<ul>{shown}{more}</ul>"
    lines = [] if status_of(entry) == OK else [f"<li><code>{escape(line)}</code></li>" for line in entry["lines"]]
    lines += [f"<li>{_text(_handler_explanation(line))}</li>" for line in _handler_lines(entry)]
    findings = entry["findings"] or []
    if not lines and not findings:
        return ""
    where = f'<div class="meta">findings as on {escape(hosts[0])}:</div>' if findings and len(hosts) > 1 else ""
    return f"<ul>{''.join(lines)}</ul>{where}{_finding_list(findings) if findings else ''}"


def _handler_lines(entry):
    """explanation_lines' per-handler lines (``  handler: CODES`` or why not explained), without the findings."""
    return explanation_lines({**entry, "findings": []})


def _handler_explanation(line):
    handler, _separator, why = line.strip().partition(": ")
    return f"`{handler}`: {why}"


def _runtimeclasses(runtimeclasses):
    if not runtimeclasses:
        return '<section id="runtimeclasses"><h2>RuntimeClasses</h2><p>None read.</p></section>'
    rows = "".join(
        f"<tr><td><span class=\"name\">{escape(runtimeclass['name'])}</span></td><td><code>{escape(runtimeclass['handler'])}</code></td>"
        f"<td>{_mapping(runtimeclass['overhead_pod_fixed'], 'none')}</td>"
        f"<td>{_mapping(runtimeclass['node_selector'], 'every node')}</td>"
        f"<td>{_names(runtimeclass['serving'], 'node')}</td>"
        f"<td>{_missing_nodes(runtimeclass['missing'])}</td></tr>"
        for runtimeclass in runtimeclasses
    )
    return (
        '<section id="runtimeclasses"><h2>RuntimeClasses</h2><div class="scroll"><table><tr><th>name</th><th>handler</th>'
        f"<th>overhead (podFixed)</th><th>nodeSelector</th><th>nodes serving</th><th>nodes missing it</th></tr>{rows}</table></div></section>"
    )


def _missing_nodes(names):
    if not names:
        return "-"
    if len(names) <= INLINE_NAMES:
        return f'{_badge("missing", str(len(names)))} {_names(names, "node")}'
    return _names(names, "node", state="missing")


def _mapping(mapping, when_empty):
    if not mapping:
        return escape(when_empty)
    return "<br>".join(f"<code>{escape(key)}={escape(str(value))}</code>" for key, value in sorted(mapping.items()))


def _hosts(groups):
    blocks = []
    for group in groups:
        entry, hosts = group["entry"], group["hosts"]
        title = status_of(entry) if status_of(entry) in (UNKNOWN, NOT_REACHED) else " ".join(entry["lines"])
        codes = sorted({code for codes in (entry["missing_explained"] or {}).values() for code in codes}
                       | {finding["code"] for finding in entry["findings"] or []})
        if entry.get("files_examined") is False:
            codes.append("config files not examined")
        members = "".join(_host_block(host, group["entries"][host]) for host in hosts)
        blocks.append(
            f'<details class="group" data-filter="{_search_text(group)}"><summary>{_badge(status_of(entry))} '
            f'<code>{escape(title)}</code> {escape(" ".join(DOT + " " + code for code in codes))} '
            f'<span class="count">{DOT} {len(hosts)} host{"s" if len(hosts) != 1 else ""}</span></summary>'
            f"{members}</details>"
        )
    return f'<section id="hosts"><h2>Hosts, by group</h2>{"".join(blocks)}</section>'


def _host_block(host, entry):
    lines = "".join(f'<li><code class="wrap">{escape(line)}</code></li>' for line in entry["lines"])
    explained = "".join(f"<li>{_text(_handler_explanation(line))}</li>" for line in _handler_lines(entry))
    facts = (
        f"node {escape(entry['node'] or host)}; default runtime {escape(entry['default_runtime'] or '-')}; "
        f"served runtimes {escape(', '.join(entry['loaded_runtimes'] or []) or '-')}; "
        f"configured runtimes {escape(', '.join(entry['configured_runtimes'] or []) or '-')}; "
        f"containerd {escape(entry['containerd_version'] or '-')}"
    )
    notes = "".join(f"<li>{escape(note)}</li>" for note in entry["notes"] or [])
    findings = _finding_list(entry["findings"], evidence=True) if entry["findings"] else ""
    return (
        f'<details class="host" id="host-{escape(host)}" data-host="{_host_search_text(host, entry)}">'
        f'<summary><span class="name"><b>{escape(host)}</b></span> {_badge(status_of(entry))}</summary>'
        f'<ul>{lines}{explained}</ul>{findings}'
        f'<p class="meta">{facts}</p>{f"<ul class=meta>{notes}</ul>" if notes else ""}</details>'
    )
