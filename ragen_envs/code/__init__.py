"""``ragen/CodeExec-v0``: function-writing problems judged by hidden tests run in ``ragen_envs.sandbox``."""
