"""Benchmark baseline only: the pool's zygote with its earlier, cooperative reset (``shutil.rmtree`` of /work
and /dev/shm, no System V IPC removal, no proof of cleanliness), run without the syscall filter.
``bench_sandbox.py`` times the pool with it and with ``ragen_envs/sandbox/zygote.py`` side by side.

The warm-pool server that runs as pid 1 inside a long-lived bubblewrap sandbox. Stdlib only.

It waits on a SOCK_SEQPACKET socket (its fd number is ``argv[2]``) for jobs: a marshal'd tuple of limits with four file
descriptors attached (the program, stdin, stdout and stderr). For each job it forks; the child sets the
rlimits, moves into a fresh work folder and runs the program through the same launcher code as a cold
sandbox. When the child ends, the server kills every other process in the sandbox (``kill(-1)`` from pid 1),
removes the work folder and reports ``(exit status, cpu seconds)``. The server makes itself non-dumpable,
and as pid 1 it ignores signals from inside the sandbox, so a program can neither read nor kill it.
"""

import marshal
import os
import shutil
import signal
import socket
import sys

LAUNCHER = compile(open(sys.argv[1]).read(), "/sandbox/launcher.py", "exec")
CHANNEL = int(sys.argv[2])


def _undumpable():
    try:
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
    except Exception:  # noqa: BLE001
        pass


def _child(limits, fds, run_dir):
    program, stdin, stdout, stderr = fds
    for target, fd in ((0, stdin), (1, stdout), (2, stderr)):
        os.dup2(fd, target)
    os.mkdir(run_dir, 0o700)
    path = os.path.join(run_dir, "main.py")
    with open(path, "wb") as f:
        f.write(os.pread(program, 1 << 26, 0))
    for fd in (program, stdin, stdout, stderr, CHANNEL):
        if fd > 2:
            os.close(fd)
    os.chdir(run_dir)
    os.environ["HOME"] = run_dir
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.argv = ["launcher", *map(str, limits), path]
    code = 0
    try:
        exec(LAUNCHER, {"__name__": "__main__", "__builtins__": __builtins__})
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, int) and exc.code is not None:
            try:
                print(exc.code, file=sys.stderr)
            except BaseException:  # noqa: BLE001
                pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001
            pass
    os._exit(code & 0xFF)


def main():
    _undumpable()
    chan = socket.socket(fileno=CHANNEL)
    runs = 0
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(chan, 4096, 4)
        except OSError:
            return
        if not msg:
            return
        limits = marshal.loads(msg)
        runs += 1
        run_dir = f"/work/run{runs}"
        pid = os.fork()
        if pid == 0:
            try:
                _child(limits, fds, run_dir)
            finally:
                os._exit(70)
        for fd in fds:
            os.close(fd)
        _, status, usage = os.wait4(pid, 0)
        # Nothing the program started may outlive it: kill the rest of the sandbox and reap it.
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        while True:
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                break
        for folder in ("/work", "/dev/shm"):  # everything the run wrote, wherever it could write
            for name in os.listdir(folder):
                path = os.path.join(folder, name)
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
        chan.send(marshal.dumps((os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime)))


main()
