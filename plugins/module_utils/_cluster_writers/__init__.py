# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""What modules write to the cluster: RuntimeClasses (plan, apply) and the gate labels on Nodes (plan, apply)."""
