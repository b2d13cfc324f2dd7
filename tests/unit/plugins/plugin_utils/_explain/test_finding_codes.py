"""The finding-code registry (_finding_codes) and docs/findings.md list the same codes: a registered code without a
row, a row for a code nobody registered, or a code with two rows fails here; and no finding is made with a code
outside the registry."""
import re

import pytest
from support.paths import REPO_ROOT

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._explain.finding_codes import FINDING_CODES, make_finding

ROW = re.compile(r"^\| `([A-Z][A-Z0-9_]+)` \| ([^|]*) \|", re.MULTILINE)


def documented_rows():
    return ROW.findall((REPO_ROOT / "docs" / "findings.md").read_text(encoding="utf-8"))


def test_findings_doc_has_one_row_per_registered_code_and_no_other():
    documented = [code for code, _severity in documented_rows()]
    assert sorted(code for code in documented if documented.count(code) > 1) == [], "a code has two rows"
    assert sorted(set(FINDING_CODES) - set(documented)) == [], "registered, but docs/findings.md has no row"
    assert sorted(set(documented) - set(FINDING_CODES)) == [], "a row in docs/findings.md, but not registered"


def test_each_row_names_the_registered_severities():
    for code, severity_text in documented_rows():
        for severity in FINDING_CODES[code].severities:
            assert severity in severity_text, f"{code}: docs/findings.md does not say it can be {severity!r}"


def test_the_registry_holds_the_codes_users_already_match_on():
    # User-visible codes (alerts, dashboards and scripts match on them): renaming one must fail a test.
    assert {"IMPORT_GLOB_MATCHES_NOTHING", "DROPIN_NOT_IMPORTED", "RELATIVE_IMPORT_GLOB", "CONFD_NOT_IMPORTED",
            "LEGACY_PLUGIN_KEY", "V3_CONFIG_ON_1X", "CRI_TABLE_REPLACED", "ROOT_CRI_SETTING_SHADOWED", "MIXED_CONFIG_VERSIONS",
            "DEFAULT_RUNTIME_UNDEFINED", "DEFAULT_RUNTIME_NOT_RUNC", "RUNTIME_TYPE_MISSING", "RUNTIME_BINARY_MISSING",
            "UNKNOWN_OPTION_KEY", "CDI_SPEC_MISSING", "PENDING_RESTART", "CONTAINERD_WILL_NOT_START", "CRI_PLUGIN_FAILS", "CRI_UNAVAILABLE",
            "HANDLER_SERVED_NOWHERE", "RUNTIMECLASS_WITHOUT_NODESELECTOR", "PODS_RUN_ON_UNSERVED_HANDLER",
            "CLUSTER_NOT_READ", "NO_HOST_JUDGED",
            "POD_DOES_NOT_FIT_WITH_OVERHEAD", "RUNTIMECLASS_OVERHEAD_EXCEEDS_ALLOCATABLE", "OVERHEAD_FIT_UNKNOWN",
            "NOT_CONFIGURED_ANYWHERE"} == set(FINDING_CODES)


@pytest.mark.parametrize("code, severity", [("NOT_A_CODE", "error"), ("DEFAULT_RUNTIME_NOT_RUNC", "error"),
                                            ("CRI_UNAVAILABLE", "warning"), ("NOT_CONFIGURED_ANYWHERE", "warning")])
def test_a_finding_outside_the_registry_is_refused(code, severity):
    with pytest.raises(ValueError, match=code):
        make_finding(code, severity, "message.", "remedy.", {})
