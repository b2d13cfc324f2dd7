"""Integration tests of the containerd_runtimes role and playbooks/rollout.yml (a package, so helpers import cleanly)."""
