"""The one exception type the core raises for input it cannot judge.

Its message is the user-facing sentence: it names the input (file, command, server) and the problem.
Entry points turn it into ``fail_json``/``AnsibleActionFail``/a line on stderr, never a traceback.
"""


class RuntimeGateError(Exception):
    """Input that cannot be judged; ``str(error)`` is the message a user sees."""
