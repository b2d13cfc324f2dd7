# Two commands on a fresh Debian/Ubuntu machine: `make demo` and `make test`. Both set themselves up.
PYTHON ?= python3
VENV := .venv
VENV_PY := $(VENV)/bin/python
ANSIBLE_PLAYBOOK := $(VENV)/bin/ansible-playbook
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
OUT := out

.PHONY: demo demo-live test sanity system-packages venv clean

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is needed for the controller, found " + sys.version.split()[0])'
	$(PYTHON) -m venv $(VENV)
	$(VENV_PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@touch $@

system-packages:
	@PYTHON=$(PYTHON) tools/install-system-packages

# The demo fleet is broken on purpose: success means the play ran to the end (ansible-playbook exit 2:
# hosts failed) with exactly the verdicts inventory/demo/expected-verdicts.yml documents.
demo: venv
	@mkdir -p $(OUT)
	$(ANSIBLE_PLAYBOOK) -i inventory/demo/hosts.yml playbooks/crosscheck.yml \
	    -e runtime_gate_verdicts_file=$(CURDIR)/$(OUT)/demo-verdicts.json; \
	  $(VENV_PY) inventory/demo/check_verdicts.py $$? $(OUT)/demo-verdicts.json inventory/demo/expected-verdicts.yml

# Same fleet, but the installed containerd dumps each node's tree (mounted at /etc/containerd; root).
demo-live: venv system-packages
	@mkdir -p $(OUT)
	$(ANSIBLE_PLAYBOOK) -i inventory/demo/hosts.yml playbooks/crosscheck.yml -e @inventory/demo/live.yml \
	    -e runtime_gate_verdicts_file=$(CURDIR)/$(OUT)/demo-live-verdicts.json; \
	  $(VENV_PY) inventory/demo/check_verdicts.py $$? $(OUT)/demo-live-verdicts.json inventory/demo/expected-verdicts.yml

# pytest exit 5 means no test ran: that is a failure here, never a green run.
test: venv system-packages
	$(VENV_PY) -m pytest $(PYTEST_ARGS); rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests" >&2; exit 1; fi; exit $$rc

# ansible-test sanity on the committed files (also part of `make test`).
sanity: venv system-packages
	tools/ansible-sanity

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
