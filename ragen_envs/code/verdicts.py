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
from fractions import Fraction
from pathlib import Path
from typing import Any

from ragen_envs.code.runner import encode
from ragen_envs.sandbox import Backend, Limits

RUNNER_SOURCE = (Path(__file__).parent / "runner.py").read_text()


@dataclass(frozen=True)
class TestOutcome:
    """One hidden test's outcome: whether it passed, how the call ended, and its value or error."""

    passed: bool
    status: str
    """``"ok"`` (returned a value), ``"error"``, ``"load_error"``, ``"timeout"``, ``"crash"`` or ``"missing"``."""
    detail: str
    """The returned value (repr of its encoding) or the error text."""


@dataclass(frozen=True)
class RunReport:
    """One sandbox run of a submission: every test's outcome, the backend, whether it was unsafe, and the limit violated
    (or None)."""

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
    """Does the candidate's encoded value (as its repr text) equal the expected encoding?

    Never raises: ``got_repr`` is whatever the candidate's process sent (it can rewrite the runner's encoder),
    so any literal, of any size or type, compares as unequal rather than failing the host.
    """
    try:
        got = ast.literal_eval(got_repr)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return False
    try:
        return _equal(want, got)
    except Exception:  # noqa: BLE001 - a value we cannot compare is a wrong answer, never a host error
        return False


def _equal(want: Any, got: Any) -> bool:
    if not isinstance(got, tuple) or not got or not isinstance(want, tuple):
        return False
    tag = want[0]
    if tag == "float" and got[0] in ("float", "int") and len(got) == 2:
        return _close(float(want[1]), got)
    if got[0] != tag or len(got) != len(want):
        return False
    if tag in ("list", "set"):
        return (
            type(got[1]) is tuple
            and len(got[1]) == len(want[1])
            and all(_equal(w, g) for w, g in zip(want[1], got[1], strict=True))
        )
    if tag == "dict":
        return (
            type(got[1]) is tuple
            and len(got[1]) == len(want[1])
            and all(
                type(pair) is tuple and len(pair) == 2 and _equal(wk, pair[0]) and _equal(wv, pair[1])
                for (wk, wv), pair in zip(want[1], got[1], strict=True)
            )
        )
    return (
        type(got[1:]) is type(want[1:])
        and got[1:] == want[1:]
        and all(type(a) is type(b) for a, b in zip(got, want, strict=True))
    )


def _close(want: float, got: tuple) -> bool:
    """``math.isclose`` (rel 1e-6, abs 1e-9) between an expected float and a returned float or int of any size."""
    if got[0] == "float":
        if type(got[1]) is not str:
            return False
        value = float(got[1])  # "1e999" is inf, "nan" is nan: both compare as floats do
        return (math.isnan(want) and math.isnan(value)) or math.isclose(want, value, rel_tol=1e-6, abs_tol=1e-9)
    if type(got[1]) is not int or not math.isfinite(want):
        return False
    # Exact rational arithmetic: an int far beyond the float range is simply far away, not an OverflowError.
    diff = abs(Fraction(want) - got[1])
    return diff <= max(Fraction(1e-6) * max(abs(Fraction(want)), abs(got[1])), Fraction(1e-9))


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
