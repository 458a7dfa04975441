"""The warm-pool server that runs as pid 1 inside a long-lived bubblewrap sandbox. Stdlib only.

It waits on a SOCK_SEQPACKET socket (its fd number is ``argv[2]``) for jobs: a marshal'd tuple of limits with four file
descriptors attached (the program, stdin, stdout and stderr). For each job it forks; the child sets the
rlimits, moves into a fresh work folder and runs the program through the same launcher code as a cold
sandbox. When the child ends, the server kills every other process in the sandbox (``kill(-1)`` from pid 1)
and reaps them, then resets the member and reports ``(exit status, cpu seconds, clean)``.

The reset does not rely on the program's cooperation: it restores the permissions of whatever the run left
in the writable tmpfs folders (``/work``, ``/dev/shm``) and deletes it without recursion (folders thousands
deep, mode 000 or 0500, pre-created names, FIFOs, symlinks), and removes every System V shared memory
segment, message queue and semaphore set listed in ``/proc/sysvipc`` (the member's own IPC namespace). Then it
*proves* the member clean: both folders empty with their original mode and no blocks in use, no System V
object left, no process but itself. ``clean`` is False when any of that fails or runs over its budget; the
host then replaces the member, so a run's own result never depends on the reset and a failed reset never
reaches the next run. (POSIX message queues and keyrings, which no file lists, are closed to the program by
the syscall filter; see ``seccomp.py``.) The server makes itself non-dumpable, and as pid 1 it ignores
signals from inside the sandbox, so a program can neither read nor kill it.
"""

import marshal
import os
import signal
import socket
import stat
import sys
import time

LAUNCHER = compile(open(sys.argv[1]).read(), "/sandbox/launcher.py", "exec")
CHANNEL = int(sys.argv[2])
FOLDERS = ("/work", "/dev/shm")
WIPE_BUDGET = 200_000
"""Directory entries the reset visits before it gives up and lets the host replace the member."""
REAP_BUDGET_S = 2.0


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


def _libc():
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True)
    except Exception:  # noqa: BLE001
        return None


LIBC = _libc()


def _reap_all():
    """Kill and reap every other process of the sandbox; True when none is left (within the budget)."""
    deadline = time.monotonic() + REAP_BUDGET_S
    while time.monotonic() < deadline:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return True  # every process of the pid namespace is a child of pid 1 once orphaned
        time.sleep(0.001)
    return False


def _wipe(root, budget):
    """Delete everything under ``root`` without recursion or following links, restoring permissions on the
    way (the program may have made folders unreadable); the number of entries visited, or -1 over budget."""
    seen, names = 0, []
    cur = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        while True:
            os.fchmod(cur, 0o700)
            sub = None
            for name in os.listdir(cur):
                seen += 1
                if seen > budget:
                    return -1
                mode = os.stat(name, dir_fd=cur, follow_symlinks=False).st_mode
                if stat.S_ISDIR(mode):
                    sub = name
                    break
                os.unlink(name, dir_fd=cur)
            if sub is not None:
                os.chmod(sub, 0o700, dir_fd=cur, follow_symlinks=False)
                child = os.open(sub, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=cur)
                os.close(cur)
                cur = child
                names.append(sub)
                continue
            if not names:
                return seen
            parent = os.open("..", os.O_RDONLY | os.O_DIRECTORY, dir_fd=cur)
            os.close(cur)
            cur = parent
            os.rmdir(names.pop(), dir_fd=cur)
    finally:
        os.close(cur)


_SYSV = (("shm", "shmctl"), ("msg", "msgctl"), ("sem", "semctl"))
IPC_RMID = 0


def _sysv_ids(kind):
    with open(f"/proc/sysvipc/{kind}") as f:
        return [int(line.split()[1]) for line in f.read().splitlines()[1:] if line.strip()]


def _remove_sysv():
    """Remove every System V object of this IPC namespace; True when none is left."""
    for kind, call in _SYSV:
        for ident in _sysv_ids(kind):
            if kind == "sem":
                getattr(LIBC, call)(ident, 0, IPC_RMID, 0)
            else:
                getattr(LIBC, call)(ident, IPC_RMID, None)
    return not any(_sysv_ids(kind) for kind, _ in _SYSV)


def _reset(modes):
    """Return the member to the state it started in; True only when that is proven (see the module docstring)."""
    try:
        if not _reap_all():
            return False
        for folder in FOLDERS:
            if _wipe(folder, WIPE_BUDGET) < 0:
                return False
            os.chmod(folder, modes[folder])
            st, vfs = os.lstat(folder), os.statvfs(folder)
            if os.listdir(folder) or st.st_mode != modes[folder] or vfs.f_bfree != vfs.f_blocks:
                return False
        return LIBC is not None and _remove_sysv()
    except BaseException:  # noqa: BLE001 - whatever went wrong, the member is not proven clean
        return False


def main():
    """Sandbox pid-1 entry point: serve jobs from the channel until it closes, resetting the member after every job."""
    _undumpable()
    chan = socket.socket(fileno=CHANNEL)
    modes = {folder: os.lstat(folder).st_mode for folder in FOLDERS}
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
        # Nothing the program started may outlive it, and nothing it left may reach the next run.
        clean = _reset(modes)
        chan.send(marshal.dumps((os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime, clean)))


main()
