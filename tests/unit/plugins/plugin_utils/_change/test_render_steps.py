"""The steps of ``make_plan``, each on its own: the root file, the drop-in's version, the import that loads the
drop-in, the files loaded today, the runtime merge and the files to write. Each refusal names the file and the problem.
"""
import tomllib

import pytest

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.render import (
    MANAGED_HEADER,
    PlanRefused,
    dropin_document,
    dropin_version_of,
    loaded_documents,
    new_plan,
    planned_files,
    root_candidate,
    root_imports_with_dropin,
)

ROOT = "/etc/containerd/config.toml"
DROPIN = "/etc/containerd/conf.d/99-gpufleet.toml"
PATTERN = "/etc/containerd/conf.d/*.toml"


def refusal(step, *args, **kwargs):
    with pytest.raises(PlanRefused) as refused:
        step(*args, **kwargs)
    return list(refused.value.args)


def test_the_nodes_own_root_is_kept_as_written():
    text = "# ours\nversion = 2\n"
    assert root_candidate(ROOT, text, 2, PATTERN, manage_root_config=False, root_settings=None) == ({"version": 2}, text)


def test_a_missing_or_broken_root_is_refused_unless_managed():
    assert refusal(root_candidate, ROOT, None, 2, PATTERN, manage_root_config=False, root_settings=None)[0].startswith(
        f"root config {ROOT} does not exist and option manage_root_config is false")
    assert refusal(root_candidate, ROOT, "x = [", 2, PATTERN, manage_root_config=False, root_settings=None)[0].startswith(
        f"root config {ROOT} is not valid TOML: ")


def test_a_managed_root_takes_the_binarys_version_and_keeps_its_imports_before_the_pattern():
    document, text = root_candidate(ROOT, "version = 2\n", 3, PATTERN, manage_root_config=True,
                                    root_settings={"version": 9, "imports": ["/opt/a.toml", 7], "root": "/data"})
    assert document == {"version": 3, "root": "/data", "imports": ["/opt/a.toml", PATTERN]}
    assert text.startswith(MANAGED_HEADER) and tomllib.loads(text) == document


def test_managed_root_settings_toml_cannot_hold_are_refused():
    assert refusal(root_candidate, ROOT, None, 2, PATTERN, manage_root_config=True,
                   root_settings={"root": None})[0].startswith("option root_settings: ")


@pytest.mark.parametrize("document, config_version, needle", [
    ({"version": "2"}, 2, "version is '2', expected an integer"),
    ({"version": True}, 2, "version is True, expected an integer"),
    ({"version": 3}, 2, "has version = 3, above the 2 that containerd 1.6.20 reads"),
    ({}, 2, "is version 1 (no version key)"),
])
def test_the_dropin_version_refusals(document, config_version, needle):
    errors = refusal(dropin_version_of, ROOT, document, config_version, "1.6.20")
    assert len(errors) == 1 and errors[0].startswith(f"root config {ROOT}") and needle in errors[0], errors


def test_the_dropin_takes_the_root_files_version_not_the_binarys():
    assert dropin_version_of(ROOT, {"version": 2}, 3, "2.2.9") == 2
    assert dropin_version_of(ROOT, {"version": 3}, 3, "2.2.9") == 3


def test_an_import_that_already_loads_the_dropin_changes_nothing():
    text = 'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n'
    assert root_imports_with_dropin(ROOT, tomllib.loads(text), text, DROPIN, PATTERN, manage_root_config=False) == (
        [PATTERN], text, [])


def test_the_pattern_is_added_to_the_nodes_root_text_when_no_import_loads_the_dropin():
    text = '# keep me\nversion = 2\nimports = ["/opt/vendor/*.conf"]\n'
    imports, candidate, added = root_imports_with_dropin(ROOT, tomllib.loads(text), text, DROPIN, PATTERN,
                                                         manage_root_config=False)
    assert imports == ["/opt/vendor/*.conf", PATTERN] and added == [PATTERN]
    assert candidate.startswith("# keep me\n") and tomllib.loads(candidate)["imports"] == imports


def test_a_managed_root_text_is_not_edited_for_the_import():
    text = MANAGED_HEADER + "version = 2\n"
    assert root_imports_with_dropin(ROOT, {"version": 2}, text, DROPIN, PATTERN, manage_root_config=True) == (
        [PATTERN], text, [PATTERN])


def test_imports_that_are_not_strings_are_refused():
    assert refusal(root_imports_with_dropin, ROOT, {"imports": ["/a.toml", 1]}, "", DROPIN, PATTERN,
                   manage_root_config=False) == [f"root config {ROOT}: imports is not an array of strings"]


def test_loaded_documents_parse_what_the_node_sent_except_the_dropin_and_refuse_every_broken_file():
    order = [ROOT, "/etc/containerd/conf.d/10-a.toml", DROPIN, "/etc/containerd/conf.d/zz.toml"]
    texts = {order[1]: "a = 1\n", DROPIN: "not = [toml", order[3]: "b = 2\n"}
    assert loaded_documents(order, ROOT, {"version": 2}, DROPIN, texts) == {
        ROOT: {"version": 2}, order[1]: {"a": 1}, order[3]: {"b": 2}}
    errors = refusal(loaded_documents, order, ROOT, {"version": 2}, DROPIN, {order[1]: "x = [", order[3]: "= 1"})
    assert [error.split(" is not valid TOML: ")[0] for error in errors] == [f"imported file {order[1]}",
                                                                            f"imported file {order[3]}"]


def plan_for_version(config_version, dropin_version):
    plan = new_plan(root_path=ROOT, runtimes=[], dropin_dir="/etc/containerd/conf.d", dropin_name="99-gpufleet.toml",
                    import_pattern=None, containerd_version="2.2.9", default_runtime=None, current_default_runtime=None,
                    allow_default_change=False)
    plan.update(config_version=config_version, dropin_version=dropin_version,
                cri_plugin="io.containerd.cri.v1.runtime" if dropin_version >= 3 else "io.containerd.grpc.v1.cri")
    return plan


def merge(plan, runtimes, **kwargs):
    options = dict(default_runtime=None, current_default_runtime=None, imported_texts={}, cri_settings=None,
                   settings_name_default=False)
    options.update(kwargs)
    return dropin_document(plan, [ROOT, DROPIN], {ROOT: {"version": plan["dropin_version"]}}, DROPIN, runtimes, **options)


def test_on_2x_the_dropin_names_only_the_requested_runtimes():
    plan = plan_for_version(3, 3)
    document = merge(plan, [{"name": "nvidia", "binary_name": "/usr/bin/nvidia-container-runtime"}],
                     cri_settings={"enable_cdi": True})
    table = document["plugins"]["io.containerd.cri.v1.runtime"]
    assert document["version"] == 3 and table["enable_cdi"] is True
    assert list(table["containerd"]) == ["runtimes"] and list(table["containerd"]["runtimes"]) == ["nvidia"]
    assert plan["errors"] == [] and plan["notes"] == []


def test_on_2x_a_default_the_dropin_set_earlier_is_kept_and_one_from_elsewhere_is_noted():
    earlier = '[plugins."io.containerd.cri.v1.runtime".containerd]\ndefault_runtime_name = "nvidia"\n'
    kept = merge(plan_for_version(3, 3), [{"name": "nvidia"}], current_default_runtime="nvidia",
                 imported_texts={DROPIN: earlier})
    assert kept["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]["default_runtime_name"] == "nvidia"
    not_kept = merge(plan_for_version(3, 3), [{"name": "nvidia"}], current_default_runtime="nvidia")
    assert "default_runtime_name" not in not_kept["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]
    plan = plan_for_version(3, 3)
    merge(plan, [{"name": "nvidia"}], default_runtime="kata")
    assert plan["notes"] == ["default runtime 'kata' must come from another file; the dump proves it"]


def test_on_1x_the_dropin_carries_the_cri_table_and_a_managed_default_wins_over_todays():
    plan = plan_for_version(2, 2)
    document = merge(plan, [{"name": "nvidia"}], current_default_runtime="nvidia", settings_name_default=False)
    assert document["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["default_runtime_name"] == "nvidia"
    plan = plan_for_version(2, 2)
    document = merge(plan, [{"name": "nvidia"}], current_default_runtime="nvidia", settings_name_default=True)
    assert "default_runtime_name" not in document["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]
    assert plan["carried_from"] == []


def test_planned_files_write_the_dropin_first_and_the_root_only_when_it_changes():
    document = {"version": 3}
    assert planned_files(ROOT, "version = 3\n", "version = 3\n", DROPIN, document) == [
        {"path": DROPIN, "content": MANAGED_HEADER + "version = 3\n"}]
    files = planned_files(ROOT, "version = 3\n", "version = 3\nimports = []\n", DROPIN, document)
    assert [item["path"] for item in files] == [DROPIN, ROOT] and files[1]["content"] == "version = 3\nimports = []\n"
    assert refusal(planned_files, ROOT, "", "", DROPIN, {"x": None})[0].startswith(f"drop-in {DROPIN}: ")
