"""The collection's own deprecation warnings in an ansible-playbook run's output: our playbooks must print none."""
import re

# ansible-core prints "[DEPRECATION WARNING]: <message> ... collection 'gpufleet.runtime_gate' version ..." (the
# message names our option or module; the text may wrap): everything up to the next bracketed level tag.
_OURS = re.compile(r"\[DEPRECATION WARNING\]:(?:(?!\n\[[A-Z]).)*?(?:gpufleet|runtime_gate)", re.S)


def collection_deprecations(output):
    """Each deprecation warning in ``output`` that is about this collection."""
    return _OURS.findall(output)
