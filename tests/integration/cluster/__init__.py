"""Tests against a real Kubernetes control plane (support/kube_cluster.py)."""
