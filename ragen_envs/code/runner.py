"""The test runner that executes inside the sandbox. Stdlib only: this file is shipped into the sandbox as the
program to run, and the host imports it only for :func:`encode`.

Protocol (stdin, bytes): an 8-byte big-endian length, a ``marshal`` blob ``{"code", "func", "tests",
"per_test_s"}``, then a per-run secret (the *nonce*) that the host generated.

Why the candidate cannot forge a verdict:

- The *expected* outputs never enter the sandbox; the host compares. The runner only reports what the
  candidate's function returned, encoded to plain tagged tuples (:func:`encode`).
- The candidate runs in a forked child whose stdin, stdout and stderr are ``/dev/null``; results travel to
  the parent over a private pipe. The parent (pid 1 of the sandbox) makes itself non-dumpable, so the child
  cannot open ``/proc/1/fd/*``, read its memory or ptrace it.
- The parent reads the nonce only after every child has exited, and stamps each line it writes with it; the
  host ignores every line without the nonce. Exit codes and stray output count for nothing.
- ``sys.exit``/``os._exit``, exceptions, hangs and crashes in the child fail the current test; the parent
  moves on to the next test in a fresh child.
"""

import marshal
import os
import time

MAX_RECORD = 64 * 1024


def encode(value, depth=0):
    """A plain, comparable form of a return value: nested tuples of tags and primitives.

    Exact types only (a ``str`` subclass with a rigged ``__eq__`` encodes as ``("other", ...)``).
    """
    if depth > 50:
        raise ValueError("value nested too deeply")
    t = type(value)
    if value is None:
        return ("none",)
    if t is bool:
        return ("bool", value)
    if t is int:
        if value.bit_length() > 4000:
            raise ValueError("integer too large")
        return ("int", value)
    if t is float:
        return ("float", repr(value))
    if t is str:
        return ("str", value)
    if t is list or t is tuple:
        return ("list", tuple(encode(v, depth + 1) for v in value))
    if t is dict:
        return (
            "dict",
            tuple(sorted(((encode(k, depth + 1), encode(v, depth + 1)) for k, v in value.items()), key=repr)),
        )
    if t is set or t is frozenset:
        return ("set", tuple(sorted((encode(v, depth + 1) for v in value), key=repr)))
    return ("other", t.__name__)


def _read_exact(fd, n):
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, n - got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _send(fd, record):
    data = marshal.dumps(record)
    os.write(fd, len(data).to_bytes(4, "big") + data)


def _child(job, start, write_fd):
    """Run the candidate on tests[start:], one record per test, then exit. Never returns."""
    devnull = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    namespace = {"__name__": "solution", "__builtins__": __builtins__}
    tests, func = job["tests"], job["func"]
    try:
        exec(compile(job["code"], "solution.py", "exec"), namespace)
        fn = namespace.get(func)
        if not callable(fn):
            raise NameError(f"your code does not define a function named {func!r}")
    except BaseException as exc:  # noqa: BLE001 - every failure is a verdict
        _send(write_fd, (start, "load_error", _trace(exc)))
        os._exit(0)
    for k in range(start, len(tests)):
        args = marshal.loads(marshal.dumps(tests[k]))  # a fresh copy: mutation cannot leak between tests
        try:
            record = (k, "ok", repr(encode(fn(*args))))
            if len(record[2]) > MAX_RECORD:
                record = (k, "error", "the returned value is too large")
        except BaseException as exc:  # noqa: BLE001
            record = (k, "error", _trace(exc))
        _send(write_fd, record)
    os._exit(0)


def _trace(exc):
    """The error as the candidate should see it: only frames from their own code."""
    import traceback

    try:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "solution.py"]
        lines = traceback.format_list(frames[-5:])
        lines += [
            line if len(line) <= 400 else line[:400] + "...\n"
            for line in traceback.format_exception_only(type(exc), exc)
        ]
        text = "Traceback (most recent call last):\n" + "".join(lines) if frames else "".join(lines)
    except BaseException:  # noqa: BLE001 - a hostile exception's __str__ may raise
        text = f"{type(exc).__name__} (message unavailable)\n"
    return text if len(text) <= 2000 else text[:600] + "...\n" + text[-1400:]


def _make_undumpable():
    try:
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
        return True
    except Exception:  # noqa: BLE001
        return False


def _collect(read_fd, first, count, per_test_s, pid):
    """Read records for tests first.. from one child; stop at the first missing one (timeout or death)."""
    import select

    results, pending, expect = {}, b"", first
    deadline = time.monotonic() + per_test_s
    while expect < count:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            results[expect] = ("timeout", f"took longer than {per_test_s:g} s")
            break
        ready, _, _ = select.select([read_fd], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(read_fd, 1 << 16)
        if not chunk:
            results[expect] = ("crash", "the process exited before returning a result")
            break
        pending += chunk
        while len(pending) >= 4:
            size = int.from_bytes(pending[:4], "big")
            if size > MAX_RECORD + 4096:
                return results, expect, True
            if len(pending) < 4 + size:
                break
            try:
                k, status, payload = marshal.loads(pending[4 : 4 + size])
            except Exception:  # noqa: BLE001 - garbage on the pipe ends this child
                return results, expect, True
            pending = pending[4 + size :]
            if k != expect or status not in ("ok", "error", "load_error") or type(payload) is not str:
                return results, expect, True
            results[k] = (status, payload)
            if status == "load_error":
                for j in range(k + 1, count):
                    results[j] = ("load_error", payload)
                return results, count, False
            expect += 1
            deadline = time.monotonic() + per_test_s
    return results, expect, False


def main():
    """Sandbox entry point: read the job from stdin, run the tests in forked children, write one nonce-tagged result
    line per test to stdout."""
    size = int.from_bytes(_read_exact(0, 8), "big")
    job = marshal.loads(_read_exact(0, size))
    _make_undumpable()
    count = len(job["tests"])
    per_test_s = float(job["per_test_s"])
    results, start = {}, 0
    while start < count:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            _child(job, start, write_fd)
        os.close(write_fd)
        got, reached, garbage = _collect(read_fd, start, count, per_test_s, pid)
        os.close(read_fd)
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        results.update(got)
        if reached >= count:
            break
        if reached not in results:
            results[reached] = ("crash", "garbage on the result channel" if garbage else "no result")
        start = reached + 1
    nonce = _read_exact(0, 64).decode("ascii", "replace").strip()
    out = []
    for k in range(count):
        status, payload = results.get(k, ("crash", "no result"))
        out.append(f"{nonce} {k} {status} {payload!r}\n")
    out.append(f"{nonce} done {count}\n")
    data = "".join(out).encode("utf-8", "backslashreplace")
    view = memoryview(data)
    while view:
        view = view[os.write(1, view) :]


if __name__ == "__main__":
    main()
