"""report.html: the report object (``_report.build_report``) as one self-contained page.

No scripts, no network: inline CSS only. Every state has a colour AND a symbol and a word in the legend,
so the page reads in greyscale and on paper. Every value from the cluster or the nodes is escaped.
"""

from html import escape

# state → (symbol, label, CSS class); the matrix states and the verdicts share the look.
LOOK = {
    "served": ("\u2714", "served", "good"),
    "missing": ("\u2718", "missing", "bad"),
    "not_required": ("\u2013", "not required", "none"),
    "unknown": ("?", "unknown", "unknown"),
    "OK": ("\u2714", "OK", "good"),
    "MISSING": ("\u2718", "MISSING", "bad"),
    "UNKNOWN": ("?", "UNKNOWN", "unknown"),
    "error": ("\u2718", "error", "bad"),
    "warning": ("!", "warning", "warn"),
}

STYLE = """
body { font: 14px/1.45 system-ui, "DejaVu Sans", sans-serif; margin: 1.5em; color: #1f2328; }
h1 { font-size: 1.5em; margin: 0 0 .3em; } h2 { font-size: 1.2em; margin: 1.4em 0 .4em; }
table { border-collapse: collapse; } th, td { border: 1px solid #d0d7de; padding: .25em .6em; text-align: left; vertical-align: top; }
.matrix td.cell { text-align: center; min-width: 4.5em; } .matrix th .meta { font-weight: normal; font-size: .85em; }
.good { background: #dafbe1; color: #116329; } .bad { background: #ffd8d3; color: #a40e26; font-weight: bold; }
.none { background: #f6f8fa; color: #59636e; } .unknown { background: #fff1b8; color: #7a4a00; font-weight: bold; }
.warn { background: #fff1b8; color: #7a4a00; }
.sym { font-size: 1.1em; } .legend span { display: inline-block; padding: .1em .5em; margin-right: .5em; border: 1px solid #d0d7de; }
.finding { margin: .3em 0; padding: .3em .6em; border-left: 4px solid #d0d7de; list-style: none; }
.finding.bad { border-left-color: #a40e26; font-weight: normal; } .finding.warn { border-left-color: #bf8700; }
.remedy { color: #1f2328; } code { font-family: "DejaVu Sans Mono", monospace; font-size: .95em; }
details { margin: .3em 0; border: 1px solid #d0d7de; padding: .3em .6em; } summary { cursor: pointer; }
ul { padding-left: 1.2em; } .meta { color: #59636e; }
"""


def render_html(report):
    counts = report["counts"]
    outcome = "PASSED" if report["passed"] else "FAILED"
    count_text = ", ".join(f"{counts[verdict]} {verdict}" for verdict in ("OK", "MISSING", "UNKNOWN"))
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>runtime_gate report: {outcome}, {count_text} of {len(report['hosts'])} hosts</title>",
        f"<style>{STYLE}</style></head><body>",
        f'<h1>RuntimeClass handler check: {_badge("OK" if report["passed"] else "MISSING", outcome)}</h1>',
        f'<p>{count_text} of {len(report["hosts"])} hosts. <span class="meta">Generated {escape(report["generated_at"])}.</span></p>',
        _sources(report["sources"]),
        _findings_section("Fleet findings", "fleet-findings", report["fleet_findings"]),
        _findings_section("Overhead warnings", "overhead-warnings", report["overhead_findings"]),
        _changes(report),
        _matrix(report["matrix"], report["hosts"], report["runtimeclasses"]),
        _runtimeclasses(report["runtimeclasses"]),
        _hosts(report["hosts"]),
        "</body></html>",
    ]
    return "\n".join(part for part in parts if part) + "\n"


def _badge(state, text=None):
    symbol, label, css = LOOK[state]
    return f'<span class="{css}"><span class="sym">{symbol}</span> {escape(text or label)}</span>'


def _sources(sources):
    cluster = sources["cluster"]
    if cluster["read"]:
        where = escape(cluster["server"] or cluster["path"] or "-")
        counts = ", ".join(f"{number} {kind}" for kind, number in (cluster["counts"] or {}).items())
        cluster_text = f"{escape(cluster['type'] or '')} {where} ({escape(counts)})"
    else:
        cluster_text = f'{_badge("UNKNOWN", "not read")}: {escape(cluster["error"] or "")}'
    inventory = escape(", ".join(sources["inventory"]) or "-")
    return f'<p class="meta">Cluster: {cluster_text}<br>Inventory: {inventory}</p>'


def _findings_section(title, anchor, findings):
    if not findings:
        return ""
    return f'<section id="{anchor}"><h2>{escape(title)}</h2>{_finding_list(findings)}</section>'


def _finding_list(findings):
    items = []
    for finding in findings:
        symbol, label, css = LOOK[finding["severity"]]
        where = f" on <b>{escape(finding['host'])}</b>" if finding.get("host") else ""
        handlers = f" (handlers: {escape(', '.join(finding['handlers']))})" if finding.get("handlers") else ""
        items.append(
            f'<li class="finding {css}"><span class="sym">{symbol}</span> {label.upper()} <code>{escape(finding["code"])}</code>'
            f"{where}{handlers}: {escape(finding['message'])}<br>"
            f'<span class="remedy">Remedy: {escape(finding["remedy"])}</span></li>'
        )
    return f"<ul>{''.join(items)}</ul>"


def _changes(report):
    previous, changed = report["previous"], report["changed_hosts"]
    if previous is None:
        return '<section id="changes"><h2>Changed since the previous run</h2><p>No previous report to compare with.</p></section>'
    if changed is None:
        body = f"<p>The previous report could not be compared: {escape(previous['error'] or '')}</p>"
    elif not changed:
        body = "<p>No host changed.</p>"
    else:
        rows = "".join(
            f"<tr><td>{escape(entry['host'])}</td><td>{_outcome(entry['previous'])}</td><td>{_outcome(entry['current'])}</td></tr>"
            for entry in changed
        )
        body = f"<table><tr><th>host</th><th>before</th><th>now</th></tr>{rows}</table>"
    since = escape(previous["generated_at"] or "unknown time")
    return f'<section id="changes"><h2>Changed since the previous run ({since})</h2>{body}</section>'


def _outcome(outcome):
    if outcome is None:
        return "not checked"
    missing = escape(", ".join(outcome["missing_handlers"]))
    return _badge(outcome["verdict"]) + (f" {missing}" if missing else "") if outcome["verdict"] in LOOK else escape(str(outcome["verdict"]))


def _classes_of(handler, runtimeclasses):
    names = [runtimeclass["name"] for runtimeclass in runtimeclasses if runtimeclass["handler"] == handler]
    label = f"RuntimeClass {', '.join(names)}" if names else "default runtime, no RuntimeClass"
    return f'<br><span class="meta">{escape(label)}</span>'


def _matrix(matrix, hosts, runtimeclasses):
    head = "".join(f"<th>{escape(handler)}{_classes_of(handler, runtimeclasses)}</th>" for handler in matrix["handlers"])
    rows = []
    for host, cells in matrix["rows"].items():
        symbols = "".join(
            f'<td class="cell {LOOK[state][2]}" title="{escape(host)} / {escape(handler)}: {LOOK[state][1]}">'
            f'<span class="sym">{LOOK[state][0]}</span></td>'
            for handler, state in cells.items()
        )
        rows.append(f'<tr><th><a href="#host-{escape(host)}">{escape(host)}</a></th><td>{_badge(hosts[host]["verdict"])}</td>{symbols}</tr>')
    legend = " ".join(_badge(state) for state in ("served", "missing", "not_required", "unknown"))
    return (
        f'<section id="matrix"><h2>Fleet matrix: hosts \u00d7 handlers</h2>'
        f'<table class="matrix"><tr><th>host</th><th>verdict</th>{head}</tr>{"".join(rows)}</table>'
        f'<p class="legend">Legend: {legend}</p></section>'
    )


def _runtimeclasses(runtimeclasses):
    if not runtimeclasses:
        return '<section id="runtimeclasses"><h2>RuntimeClasses</h2><p>None read.</p></section>'
    rows = "".join(
        f"<tr><td>{escape(runtimeclass['name'])}</td><td><code>{escape(runtimeclass['handler'])}</code></td>"
        f"<td>{_mapping(runtimeclass['overhead_pod_fixed'], 'none')}</td>"
        f"<td>{_mapping(runtimeclass['node_selector'], 'every node')}</td>"
        f"<td>{escape(', '.join(runtimeclass['serving']) or '-')}</td>"
        f"<td>{_badge('missing', ', '.join(runtimeclass['missing'])) if runtimeclass['missing'] else '-'}</td></tr>"
        for runtimeclass in runtimeclasses
    )
    return (
        '<section id="runtimeclasses"><h2>RuntimeClasses</h2><table><tr><th>name</th><th>handler</th><th>overhead (podFixed)</th>'
        f"<th>nodeSelector</th><th>nodes serving</th><th>nodes missing it</th></tr>{rows}</table></section>"
    )


def _mapping(mapping, when_empty):
    if not mapping:
        return escape(when_empty)
    return "<br>".join(f"<code>{escape(key)}={escape(str(value))}</code>" for key, value in sorted(mapping.items()))


def _hosts(hosts):
    blocks = []
    for host, entry in hosts.items():
        opened = " open" if entry["verdict"] != "OK" or entry["findings"] else ""
        lines = "".join(f"<li><code>{escape(line)}</code></li>" for line in entry["lines"])
        facts = (
            f"node {escape(entry['node'] or host)}; default runtime {escape(entry['default_runtime'] or '-')}; "
            f"served runtimes {escape(', '.join(entry['loaded_runtimes'] or []) or '-')}; "
            f"configured runtimes {escape(', '.join(entry['configured_runtimes'] or []) or '-')}; "
            f"containerd {escape(entry['containerd_version'] or '-')}"
        )
        notes = "".join(f"<li>{escape(note)}</li>" for note in entry["notes"] or [])
        blocks.append(
            f'<details id="host-{escape(host)}"{opened}><summary><b>{escape(host)}</b> {_badge(entry["verdict"])}</summary>'
            f'<ul>{lines}</ul>{_finding_list(entry["findings"]) if entry["findings"] else ""}'
            f'<p class="meta">{facts}</p>{f"<ul class=meta>{notes}</ul>" if notes else ""}</details>'
        )
    return f'<section id="hosts"><h2>Hosts</h2>{"".join(blocks)}</section>'
