"""check_verdicts.py PLAYBOOK_RC VERDICTS_JSON EXPECTED_YML — did the demo end as documented?

The demo fleet is broken on purpose, so ansible-playbook must exit 2 (hosts failed) having written the
verdicts of every host, and they must equal inventory/demo/expected-verdicts.yml. Exit 0 when they do,
1 otherwise, with the differences on stderr.
"""
import json
import sys

import yaml

EXPECTED_PLAYBOOK_RC = 2  # ansible-playbook: "one or more hosts failed"


def main(playbook_rc, verdicts_path, expected_path):
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
        elif (got["verdict"], got["missing_handlers"]) != (want["verdict"], want["missing_handlers"]):
            problems.append(f"{host}: got {got['verdict']} {got['missing_handlers']}, expected {want['verdict']} {want['missing_handlers']}")
    for problem in problems:
        print(f"demo: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"demo: all {len(expected)} verdicts as documented (README, 'The demo fleet'); verdicts in {verdicts_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
