"""The base_runtime_spec class of hostile input (issue 22 item 1): whatever paths a dump names, the node checks at most
MAX_BASE_SPECS files, each bounded, inside host_root, and never says "ok" for a file that is not a JSON object there."""
import json
import os

from fuzz.fuzzing import fuzz_settings, toml_string
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node import base_specs

NAMED = st.one_of(
    st.sampled_from(["/etc/spec.json", "/etc/list.json", "/etc/big.json", "/etc/link.json", "/etc/loop.json",
                     "/proc/self/environ", "/dev/zero", "/etc", "etc/spec.json", "/nonexistent", "/etc/../etc/spec.json"]),
    st.text(min_size=1, max_size=40),
)


@settings(fuzz_settings(150), suppress_health_check=list(HealthCheck))
@given(paths=st.lists(NAMED, min_size=0, max_size=base_specs.MAX_BASE_SPECS + 10), junk=st.text(max_size=200))
def test_any_named_paths_give_a_bounded_answer_from_inside_host_root(tmp_path_factory, paths, junk):
    base = tmp_path_factory.mktemp("specs")
    root, outside = base / "node", base / "outside"
    (root / "etc").mkdir(parents=True)
    outside.mkdir()
    (outside / "spec.json").write_text("{}")
    (root / "etc" / "spec.json").write_text('{"ociVersion": "1.1.0"}')
    (root / "etc" / "list.json").write_text("[]")
    with open(root / "etc" / "big.json", "wb") as handle:
        handle.truncate(base_specs.MAX_BASE_SPEC_BYTES + 1)
    os.symlink(str(outside / "spec.json"), root / "etc" / "link.json")  # this machine's path: not the node's
    os.symlink("loop.json", root / "etc" / "loop.json")
    dump = junk + "\n" + "".join(f"  base_runtime_spec = {toml_string(path)}\n" for path in paths)
    specs = base_specs.base_runtime_specs(dump, host_root=str(root))
    assert len(specs) <= base_specs.MAX_BASE_SPECS + 1
    json.dumps(specs)  # plain data for the module result
    for path, entry in specs.items():
        assert entry["state"] in ("ok", "missing", "invalid", "unchecked"), entry
        if entry["state"] == "ok":
            assert os.path.normpath("/" + path.lstrip("/")) == "/etc/spec.json", (path, entry)
