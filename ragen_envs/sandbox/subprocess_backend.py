"""The *unsafe* backend: a plain host subprocess with rlimits and a timeout. Opt-in only.

It contains nothing: the program sees the host's files, network and processes, and runs as the calling
user. It exists for machines where no sandbox can run and the code is trusted (e.g. our own reference
solutions). Every :class:`Result` it returns has ``unsafe=True``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

from ragen_envs.sandbox.base import (
    Backend,
    Limits,
    Result,
    as_bytes,
    classify,
    kill_process_group,
    launcher_args,
    supervise,
)
from ragen_envs.sandbox.bwrap import LAUNCHER_SOURCE


class UnsafeSubprocessBackend(Backend):
    """Run code in a host subprocess: **no isolation**. Construct with ``i_understand_this_is_unsafe=True``."""

    name = "unsafe-subprocess"
    unsafe = True

    def __init__(self, *, i_understand_this_is_unsafe: bool = False, python: str = sys.executable) -> None:
        if not i_understand_this_is_unsafe:
            raise ValueError(
                "the unsafe subprocess backend runs untrusted code on the host with no isolation; pass "
                "i_understand_this_is_unsafe=True to use it anyway, or install bubblewrap (apt-get install bubblewrap)"
            )
        self.python = python

    @classmethod
    def available(cls) -> bool:
        """Backend protocol's available: always (it only needs a subprocess)."""
        return True

    def run(self, code: str, stdin: str | bytes = "", limits: Limits | None = None) -> Result:
        """Backend protocol's run: execute ``code`` as a Python program fed ``stdin``, under ``limits`` (default
        :class:`Limits`), in a plain subprocess with rlimits only (not a sandbox: results say ``unsafe``)."""
        limits = limits or Limits()
        with tempfile.TemporaryDirectory(prefix="ragen-unsafe-") as work:
            launcher = os.path.join(work, "launcher.py")
            program = os.path.join(work, "main.py")
            with open(launcher, "wb") as f:
                f.write(LAUNCHER_SOURCE)
            with open(program, "w", encoding="utf-8", errors="surrogatepass") as f:
                f.write(code)
            # RLIMIT_NPROC counts every process of this uid on the host: it cannot bound the program alone.
            args = [self.python, "-I", "-S", launcher, *launcher_args(limits, processes=1 << 20), program]
            env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": work, "LANG": "C.UTF-8"}
            stdin_file = open(os.path.join(work, "stdin"), "w+b")  # noqa: SIM115 - closed below
            stdin_file.write(as_bytes(stdin))
            stdin_file.seek(0)
            proc = subprocess.Popen(
                args,
                stdin=stdin_file,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=work,
                env=env,
                start_new_session=True,
            )
            started = time.monotonic()
            stdin_file.close()
            try:
                captured = supervise(proc, limits, lambda: kill_process_group(proc), started)
            finally:
                kill_process_group(proc)
        violation = classify(captured, exit_code=captured.returncode, cpu_limit_s=max(1, round(limits.cpu_s)))
        return Result.from_captured(
            captured,
            violation,
            backend=self.name,
            enforcement="UNSAFE: host subprocess, rlimits and timeout only (no filesystem, network or process isolation)",
            unsafe=True,
        )
