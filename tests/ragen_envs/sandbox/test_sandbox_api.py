"""The public sandbox API: running code, limits, backend selection and failing closed."""

from __future__ import annotations

import pytest

from ragen_envs import sandbox
from ragen_envs.sandbox import bwrap

pytestmark = pytest.mark.skipif(not bwrap.BwrapBackend.available(), reason="bubblewrap cannot run here")


def test_run_reads_stdin_and_reports_fields():
    res = sandbox.run("print(input()[::-1])", stdin="abc", limits=sandbox.Limits(wall_s=5, memory_mb=512))
    assert res.stdout == "cba\n" and res.stderr == "" and res.exit_code == 0
    assert not res.timed_out and res.violation is None and res.ok
    assert res.backend == "bwrap" and not res.unsafe and res.wall_s > 0
    assert "rlimits" in res.enforcement


def test_exit_code_and_traceback_are_the_programs():
    res = sandbox.run("import sys\nprint('x')\nsys.exit(3)")
    assert (res.exit_code, res.stdout) == (3, "x\n")
    res = sandbox.run("def f():\n    raise KeyError('k')\nf()")
    assert res.exit_code == 1 and "KeyError: 'k'" in res.stderr and 'File "/sandbox/main.py", line 2' in res.stderr
    assert "launcher" not in res.stderr


def test_bytes_stdin_and_unicode_output():
    res = sandbox.run("import sys\ndata = sys.stdin.buffer.read()\nprint(len(data), 'é√')", stdin=b"\x00\xff" * 10)
    assert res.stdout == "20 é√\n"


def test_available_backends_lists_bwrap_first():
    assert sandbox.available_backends()[0] == "bwrap"
    assert "unsafe-subprocess" not in sandbox.available_backends()


@pytest.mark.parametrize(
    "field, value",
    [("wall_s", 0), ("memory_mb", 8), ("processes", 0), ("output_bytes", 0), ("cpu_s", -1), ("file_size_mb", 1.5)],
)
def test_limits_reject_bad_values_naming_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        sandbox.Limits(**{field: value})


def test_unknown_backend_suggests_the_closest():
    with pytest.raises(ValueError, match="Did you mean 'bwrap'"):
        sandbox.get_backend("bwarp")


def test_unsafe_backend_needs_explicit_opt_in_and_flags_every_result():
    with pytest.raises(ValueError, match="allow_unsafe=True"):
        sandbox.run("print(1)", backend="unsafe-subprocess")
    res = sandbox.run("print(1)", backend="unsafe-subprocess", allow_unsafe=True)
    assert res.stdout == "1\n" and res.unsafe and "UNSAFE" in res.enforcement


def test_fails_closed_without_a_secure_backend(monkeypatch):
    from ragen_envs.sandbox import docker_backend

    monkeypatch.setattr(bwrap.BwrapBackend, "available", classmethod(lambda cls: False))
    monkeypatch.setattr(docker_backend.DockerBackend, "available", classmethod(lambda cls: False))
    with pytest.raises(sandbox.SandboxUnavailable, match="apt-get install bubblewrap"):
        sandbox.run("print(1)")
    assert sandbox.available_backends() == []


def test_concurrent_runs_use_distinct_uids():
    import os
    from concurrent.futures import ThreadPoolExecutor

    if os.geteuid() != 0:
        pytest.skip("uid switching needs root")
    code = "import os, time\ntime.sleep(0.3)\nprint(os.getuid())"
    with ThreadPoolExecutor(4) as pool:
        uids = [r.stdout.strip() for r in pool.map(lambda _: sandbox.run(code), range(4))]
    assert len(set(uids)) == 4, uids
