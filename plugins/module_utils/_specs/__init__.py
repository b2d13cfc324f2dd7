# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
