"""docs/findings.md documents exactly the codes the host and fleet rules can emit: a new code without a row, or a row
for a code no rule emits any more, fails here."""
import re

from support.paths import REPO_ROOT

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._findings import FLEET_CODES
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._host_rules import HOST_CODES

ROW_CODE = re.compile(r"^\| `([A-Z][A-Z0-9_]+)` \|", re.MULTILINE)


def test_findings_doc_has_one_row_per_code():
    documented = ROW_CODE.findall((REPO_ROOT / "docs" / "findings.md").read_text(encoding="utf-8"))
    assert len(documented) == len(set(documented)), "a code has two rows"
    assert set(documented) == set(HOST_CODES) | set(FLEET_CODES)
