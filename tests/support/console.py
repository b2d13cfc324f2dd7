"""Results as ansible-playbook prints them: the checkout's console callback (YAML) or ansible-core's default (JSON)."""
from __future__ import annotations

import json
import re
import textwrap

import yaml


def printed_results(stdout: str, host: str, statuses=("fatal", "failed")) -> list[dict]:
    """Every result printed as ``fatal: [host]: FAILED! =>`` (or ``UNREACHABLE!``, or ``failed: [host] (item=…) =>``)
    for ``host``, decoded.

    The YAML form is the header alone, then the result indented below it; the JSON form is one line, or an
    indented object up to its ``}``.
    """
    header = re.compile(rf"^(?:{'|'.join(statuses)}): \[{re.escape(host)}(?:\s*->\s*[^\]]+)?\].*? =>(.*)$")
    lines = stdout.splitlines()
    results = []
    for index, line in enumerate(lines):
        match = header.match(line)
        if not match:
            continue
        rest = match.group(1).strip()
        if rest.startswith("{") and rest.endswith("}"):
            results.append(json.loads(rest))
            continue
        body = [rest] if rest else []
        for following in lines[index + 1:]:
            if rest == "{":
                body.append(following)
                if following.rstrip() == "}":
                    break
            elif following.startswith(" ") or not following:
                body.append(following)
            else:
                break
        text = "\n".join(body).rstrip("\n")
        results.append(json.loads(text) if rest == "{" else yaml.safe_load(textwrap.dedent(text)))
    return results


def failure_messages(stdout: str, host: str) -> list[str]:
    """The ``msg`` of every failed or unreachable result printed for ``host``."""
    return [str(result.get("msg", "")) for result in printed_results(stdout, host)]


def ok_messages(stdout: str, host: str) -> list[str]:
    """The ``msg`` of every result printed as ``ok: [host] =>`` (a debug task's message, decoded)."""
    return [str(result.get("msg", "")) for result in printed_results(stdout, host, statuses=("ok",))]
