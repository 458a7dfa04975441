"""Host side of a test run: pack the job for the in-sandbox runner, run it, and judge what comes back.

Judging happens here, on the host, against expected outputs that never entered the sandbox; only lines
stamped with this run's nonce are read (see ``runner.py`` for why the candidate cannot produce them).
"""

from __future__ import annotations

import ast
import marshal
import math
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragen_envs.code.runner import encode
from ragen_envs.sandbox import Backend, Limits

RUNNER_SOURCE = (Path(__file__).parent / "runner.py").read_text()


@dataclass(frozen=True)
class TestOutcome:
    passed: bool
    status: str
    """``"ok"`` (returned a value), ``"error"``, ``"load_error"``, ``"timeout"``, ``"crash"`` or ``"missing"``."""
    detail: str
    """The returned value (repr of its encoding) or the error text."""


@dataclass(frozen=True)
class RunReport:
    outcomes: tuple[TestOutcome, ...]
    backend: str
    unsafe: bool
    violation: str | None


def run_tests(
    backend: Backend,
    code: str,
    func: str,
    tests: list[tuple],
    expected: list[Any],
    *,
    per_test_s: float = 2.0,
    memory_mb: int = 256,
    nonce: str | None = None,
) -> RunReport:
    """Run ``func`` from ``code`` on every argument tuple in ``tests`` in one sandbox and judge each result."""
    nonce = nonce or secrets.token_hex(16)
    job = marshal.dumps({"code": code, "func": func, "tests": [tuple(t) for t in tests], "per_test_s": per_test_s})
    stdin = len(job).to_bytes(8, "big") + job + nonce.encode("ascii")
    limits = Limits(
        wall_s=per_test_s * (len(tests) + 1) + 2.0,
        cpu_s=per_test_s * (len(tests) + 1) + 1.0,
        memory_mb=memory_mb,
        output_bytes=max(1 << 20, 80 * 1024 * len(tests)),
    )
    result = backend.run(RUNNER_SOURCE, stdin, limits)
    records = parse_records(result.stdout, nonce, len(tests))
    outcomes = []
    for k, want in enumerate(expected):
        status, payload = records.get(k, ("missing", _missing_reason(result)))
        passed = status == "ok" and matches(encode(want), payload)
        outcomes.append(TestOutcome(passed=passed, status=status, detail=payload))
    return RunReport(tuple(outcomes), result.backend, result.unsafe, result.violation)


def _missing_reason(result) -> str:
    if result.violation:
        return f"the sandbox stopped the run ({result.violation})"
    return "no result"


def parse_records(stdout: str, nonce: str, count: int) -> dict[int, tuple[str, str]]:
    """``{test index: (status, payload)}`` from the nonce-stamped lines of the runner's output."""
    records: dict[int, tuple[str, str]] = {}
    prefix = nonce + " "
    for line in stdout.splitlines():
        if not line.startswith(prefix):
            continue
        parts = line[len(prefix) :].split(" ", 2)
        if len(parts) != 3 or not parts[0].isdigit():
            continue
        k = int(parts[0])
        if k >= count or k in records:
            continue
        try:
            payload = ast.literal_eval(parts[2])
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            continue
        if isinstance(payload, str):
            records[k] = (parts[1], payload)
    return records


def matches(want: tuple, got_repr: str) -> bool:
    """Does the candidate's encoded value (as its repr text) equal the expected encoding?"""
    try:
        got = ast.literal_eval(got_repr)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return False
    try:
        return _equal(want, got)
    except (TypeError, ValueError, IndexError, RecursionError):
        return False


def _equal(want: Any, got: Any) -> bool:
    if not isinstance(got, tuple) or not got or not isinstance(want, tuple):
        return False
    tag = want[0]
    if tag == "float" and got[0] in ("float", "int") and len(got) == 2:
        a, b = float(want[1]), float(got[1])
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)
    if got[0] != tag or len(got) != len(want):
        return False
    if tag in ("list", "set"):
        return len(got[1]) == len(want[1]) and all(_equal(w, g) for w, g in zip(want[1], got[1]))
    if tag == "dict":
        return len(got[1]) == len(want[1]) and all(
            _equal(wk, gk) and _equal(wv, gv) for (wk, wv), (gk, gv) in zip(want[1], got[1])
        )
    return (
        type(got[1:]) is type(want[1:]) and got[1:] == want[1:] and all(type(a) is type(b) for a, b in zip(got, want))
    )


def decode_value(payload: str) -> Any:
    """The Python value behind an encoded payload, for feedback text (best effort)."""
    try:
        return _decode(ast.literal_eval(payload))
    except Exception:  # noqa: BLE001 - feedback only
        return payload


def _decode(enc: tuple) -> Any:
    tag = enc[0]
    if tag == "none":
        return None
    if tag in ("bool", "int", "str"):
        return enc[1]
    if tag == "float":
        return float(enc[1])
    if tag == "list":
        return [_decode(v) for v in enc[1]]
    if tag == "set":
        return {_decode(v) for v in enc[1]}
    if tag == "dict":
        return {_decode(k): _decode(v) for k, v in enc[1]}
    return _Opaque(f"<{enc[1]} object>")


class _Opaque(str):
    def __repr__(self) -> str:
        return str(self)
