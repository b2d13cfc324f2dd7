# Two commands on a fresh Debian/Ubuntu machine: `make demo` and `make test`. Both set themselves up.
PYTHON ?= python3
VENV := .venv
VENV_PY := $(VENV)/bin/python
ANSIBLE_PLAYBOOK := $(VENV)/bin/ansible-playbook
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
OUT := out

.PHONY: demo demo-live demo-rollout check test sanity system-packages components differential venv clean

venv: $(VENV)/.installed

# requirements.txt: what the collection needs on a controller (and in a user's EE); requirements-test.txt: the rest.
$(VENV)/.installed: requirements.txt requirements-test.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is needed for the controller, found " + sys.version.split()[0])'
	$(PYTHON) -m venv $(VENV)
	$(VENV_PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt -r requirements-test.txt
	@touch $@

system-packages:
	@PYTHON=$(PYTHON) tools/install-system-packages

# The demo fleet is broken on purpose: success means the play ran to the end (ansible-playbook exit 2:
# hosts failed) with exactly the verdicts inventory/demo/expected-verdicts.yml documents, and the nightly
# reports (report.json, junit.xml, report.html) in $(OUT)/ say the same; the last line says where they are.
demo: venv
	@mkdir -p $(OUT)
	$(ANSIBLE_PLAYBOOK) -i inventory/demo/hosts.yml playbooks/nightly.yml -e runtime_gate_report_dir=$(CURDIR)/$(OUT) \
	    -e runtime_gate_verdicts_file=$(CURDIR)/$(OUT)/demo-verdicts.json; \
	  $(VENV_PY) inventory/demo/check_verdicts.py $$? $(OUT)/demo-verdicts.json inventory/demo/expected-verdicts.yml $(OUT)

# Same fleet, but the installed containerd dumps each node's tree (mounted at /etc/containerd; root).
demo-live: venv system-packages
	@mkdir -p $(OUT)
	$(ANSIBLE_PLAYBOOK) -i inventory/demo/hosts.yml playbooks/crosscheck.yml -e @inventory/demo/live.yml \
	    -e runtime_gate_verdicts_file=$(CURDIR)/$(OUT)/demo-live-verdicts.json; \
	  $(VENV_PY) inventory/demo/check_verdicts.py $$? $(OUT)/demo-live-verdicts.json inventory/demo/expected-verdicts.yml

# The broken demo nodes repaired by playbooks/rollout.yml in a scratch copy (out/demo-rollout; real containerd,
# restart stand-in), then crosscheck.yml over the repaired trees must pass (exit 0). See docs/role.md.
demo-rollout: venv system-packages
	inventory/example/demo-rollout-prepare $(OUT)/demo-rollout
	$(ANSIBLE_PLAYBOOK) -i inventory/example/demo-rollout.yml playbooks/rollout.yml -e '{"runtime_gate_serial": ["1", "50%", "100%"]}'
	$(ANSIBLE_PLAYBOOK) -i inventory/example/demo-rollout.yml playbooks/crosscheck.yml \
	    -e runtime_gate_verdicts_file=$(CURDIR)/$(OUT)/demo-rollout/verdicts.json

# The real third-party binaries the tests run, built once per machine from the Go module proxy with the `go` client
# into ~/.cache/gpufleet-runtime-gate (tools/build-components prints what it builds and how long it takes; the first
# run takes about 15 minutes on 2 cores, later runs a second): containerd releases and crictl for the node side,
# etcd, kube-apiserver, kube-scheduler and kwok for the real cluster of tests/integration/cluster, kubelet and ctr for its
# real nodes (tests/support/real_nodes.py).
COMPONENTS ?= containerd-1.7 containerd-2.0 containerd-2.1 containerd-2.2 containerd-2.3 containerd-2.4 ctr crictl etcd \
	kube-apiserver kube-scheduler kubelet kwok
components:
	@tools/build-components $(COMPONENTS)

# The contributor's loop: a few minutes, nothing to build or install but the venv (CONTRIBUTING.md). The unit tests,
# the fuzzers on a tenth of their budget, the module contract, ansible-lint and ansible-test's quick linters (pep8,
# validate-modules, yamllint; `make sanity` runs them all), the demo's tests, then `make demo`. A test
# that needs a component, a system package or root carries the `components` marker (pytest.ini) and runs in `make test`
# only: here RUNTIME_GATE_CHECK makes any selected test that asks for one fail (tests/support/tools.py), the component
# cache is an empty directory, and a skipped test fails too (tests/conftest.py).
CHECK_TESTS := tests/unit tests/fuzz tests/integration/test_ansible_lint.py tests/integration/test_demo.py
CHECK_JOBS ?= 2
CHECK_SANITY ?= --test pep8 --test validate-modules --test yamllint
check: check-tests check-sanity demo

.PHONY: check-tests check-sanity
check-sanity: venv
	tools/ansible-sanity $(CHECK_SANITY)

check-tests: venv
	@rm -rf $(OUT)/no-components && mkdir -p $(OUT)/no-components
	RUNTIME_GATE_CHECK=1 RUNTIME_GATE_CACHE=$(CURDIR)/$(OUT)/no-components RUNTIME_GATE_FUZZ_BUDGET=0.1 \
	  $(VENV_PY) -m pytest -q -n $(CHECK_JOBS) -m "not components" $(CHECK_TESTS) $(PYTEST_ARGS)

# pytest exit 5 means no test ran: that is a failure here, never a green run. TEST_JOBS pytest-xdist workers, each
# running whole test files (module fixtures start once; tests/conftest.py hands out the longest files first); most of
# the suite waits on daemons and playbooks rather than computing. TEST_JOBS=0: one process.
TEST_JOBS ?= 2
test: venv system-packages components
	$(VENV_PY) -m pytest -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS); rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests" >&2; exit 1; fi; exit $$rc

# ansible-test sanity on the committed files (also part of `make test`).
sanity: venv system-packages
	tools/ansible-sanity

# crosscheck.yml against the floor (one containerd config dump per host) over 200 local hosts, plus the
# core's per-node time and the API requests per run (benchmarks/README.md). Timings are reported, never asserted;
# it exits 1 only when a run misbehaves (a host UNKNOWN, API requests that grow with the host count).
.PHONY: benchmark
BENCHMARK_ARGS ?= --hosts 200
benchmark: venv system-packages components
	benchmarks/crosscheck_scale $(BENCHMARK_ARGS)

# Growth (not part of `make test`): one floor and one crosscheck run at 200 and at 1,000 local hosts, printing time per
# host, the controller's and the nodes' CPU per host (cgroup v1 cpuacct) and the controller's peak RSS for each
# (benchmarks/README.md). About 15 minutes on 2 cores.
.PHONY: benchmark-growth
GROWTH_HOSTS ?= 200 1000
benchmark-growth: venv system-packages components
	benchmarks/crosscheck_scale --growth $(GROWTH_HOSTS)

# Generated node config trees x every containerd release: our verdict against the real daemon (tools/differential).
# `make test` runs 100 trees; this runs DIFFERENTIAL_TREES (1,000) and prints the totals.
DIFFERENTIAL_TREES ?= 1000
differential: venv system-packages components
	$(VENV_PY) tools/differential --trees $(DIFFERENTIAL_TREES)

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
