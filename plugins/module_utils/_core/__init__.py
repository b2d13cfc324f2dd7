# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The words every stage shares: verdict vocabulary, requirements, handler and DNS names, the one error type."""
