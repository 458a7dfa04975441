"""First code to run inside a sandbox: set the per-process limits, then run the program as ``__main__``.

Runs under the sandbox's own interpreter (stdlib only, started with ``-I -S``) and is shipped into the
sandbox as a file, so it must not import anything from ``ragen_envs``. Usage inside the sandbox::

    python3 -I -S launcher.py CPU_S MEMORY_BYTES PROCESSES FILE_BYTES OPEN_FILES START_MARK PROGRAM.py

``START_MARK`` is written to stderr just before the program runs: the host starts the wall clock there and
strips it (``base.WallClock``).

The limits are set here rather than before the sandbox starts because RLIMIT_NPROC is counted per user
namespace and uid: set inside, it bounds exactly the processes of this sandbox.
"""

import os
import resource
import sys


def _limit(which, soft, hard=None):
    hard = soft if hard is None else hard
    try:
        resource.setrlimit(which, (soft, hard))
    except (ValueError, OSError):
        # Never raise a limit the host already set lower; keep the lower one.
        cur_soft, cur_hard = resource.getrlimit(which)
        resource.setrlimit(which, (min(soft, cur_hard), cur_hard))


def main():
    """Sandbox entry point: set the rlimits from ``argv`` (soft = hard), then run the program as ``__main__``."""
    cpu_s, memory, processes, file_bytes, open_files = (int(x) for x in sys.argv[1:6])
    start_mark, program = os.fsencode(sys.argv[6]), sys.argv[7]
    # soft = hard: the kernel then SIGKILLs at the limit (a soft-limit SIGXCPU is ignored by a pid-1 program)
    _limit(resource.RLIMIT_CPU, cpu_s)
    _limit(resource.RLIMIT_AS, memory)
    _limit(resource.RLIMIT_NPROC, processes)
    _limit(resource.RLIMIT_FSIZE, file_bytes)
    _limit(resource.RLIMIT_NOFILE, open_files)
    _limit(resource.RLIMIT_CORE, 0)
    with open(program, encoding="utf-8", errors="replace") as f:
        source = f.read()
    import builtins

    if not hasattr(builtins, "exit"):  # -S skips site, which defines exit() and quit()
        builtins.exit = builtins.quit = sys.exit
    sys.argv = [program]
    sys.path.insert(0, os.path.dirname(program))
    namespace = {"__name__": "__main__", "__file__": program, "__builtins__": __builtins__}
    try:
        code = compile(source, program, "exec")
        del source
        try:
            os.write(2, start_mark)  # shorter than PIPE_BUF: one atomic write
        except OSError:
            pass
        exec(code, namespace)
    except SystemExit:
        raise
    except BaseException as exc:  # noqa: BLE001 - report like the interpreter would, without this frame
        import traceback

        tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
        traceback.print_exception(type(exc), exc, tb)
        # End now, like a crash: waiting for the program's other threads would turn a failure into a timeout.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001
                pass
        os._exit(1)


main()
