"""Write a Python function that passes hidden tests, run in a real sandbox (``ragen/CodeExec-v0``).

## Description
Each seed draws one of 60+ problem families written for this suite (strings, lists, dictionaries, number
theory, parsing, simulation, simple algorithms; see ``problems.py`` and ``families_*.py``) and instances it:
the function's name, its constants and the edge cases among the hidden tests are drawn from the seed, so
a solution memorized from one instance does not pass another. The prompt gives the signature, a
description and two examples with their outputs.

The answer is run against the two examples and ``num_hidden_tests`` hidden tests by a runner inside the
sandbox (``ragen_envs.sandbox``: bubblewrap by default, Docker, or the opt-in unsafe subprocess backend).
Verdicts are made on the host against expected outputs that never enter the sandbox; the runner's lines are
stamped with a per-run secret the candidate cannot read, and the candidate's exit code and output count for
nothing (``runner.py`` explains the guarantees).

## Action Space
A response whose answer is Python code defining the function: a fenced ```python block or bare code, e.g.
``<think>…</think><answer>```python\\ndef f(x):\\n    return x\\n```</answer>``. An answer that does not
mention the function's name is rejected without running anything (format penalty, turn used); the
feedback says why (no code; the syntax error and its line; no function of that name, and which it defines).

## Observation Space
The problem statement (signature, description, examples). After an attempt that did not pass everything,
feedback comes first: the first failing *visible* example (call, returned value, expected value), or the
error trace (truncated to ``max_feedback_chars``), or, when the examples pass, how many hidden tests passed.
Hidden test inputs are never shown.

## Rewards
The improvement of the best fraction of hidden tests passed so far, so an episode's return is the best
fraction reached (1.0 when solved) plus any format penalties.

## Episode End
Terminated when every hidden test passes (``success``). Truncated after ``max_turns`` (3) attempts.

## Version History
- v0: initial release. Later, still v0: the feedback after a rejected answer names what was wrong instead of
  "Unknown action(s) … were ignored" (which answers are rejected, rewards and termination are unchanged; only
  the text an agent sees after an answer that never ran differs, so recorded episodes in which every answer
  ran replay identically).
"""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass
from typing import Any

from ragen_envs import sandbox
from ragen_envs.arguments import EnvConfig, argument
from ragen_envs.code.problems import FAMILIES, Problem, call_text, make_problem
from ragen_envs.code.verdicts import RunReport, decode_value, run_tests
from ragen_envs.core import TEXT_CHARSET, ActionResult, TextEnv
from ragen_envs.tools import ActionTool

MAX_CODE_CHARS = 64 * 1024
_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class CodeExecConfig(EnvConfig):
    """How problems are drawn and how answers are run."""

    num_hidden_tests: int = argument(8, "Hidden tests per problem.", low=1, high=100, integer=True)
    families: tuple[str, ...] | None = argument(
        None, "Family names to draw from (``None``: all of them).", allowed="a non-empty tuple of family names"
    )
    per_test_s: float = argument(2.0, "Seconds each test may run (wall clock).", low=0.05, high=60)
    memory_mb: int = argument(256, "Memory of the whole sandbox, in MiB.", low=64, high=1 << 16, integer=True)
    backend: str = argument(
        "auto-pool",
        "``auto-pool``: the warm pool of bubblewrap sandboxes, else Docker, else an error that says what to install; "
        "``bwrap`` for a fresh sandbox per answer, ``docker``; ``unsafe-subprocess`` needs ``allow_unsafe=True``.",
        allowed="a name of ``ragen_envs.sandbox.get_backend``",
    )
    allow_unsafe: bool = argument(
        False, "Allow the ``unsafe-subprocess`` backend (no isolation).", choices=(False, True)
    )
    max_feedback_chars: int = argument(
        1500, "Longest error trace shown after an attempt.", low=100, high=1 << 16, integer=True
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.families, list):  # as JSON (``--env-kwargs``) gives it
            object.__setattr__(self, "families", tuple(self.families))
        if self.families is not None:
            if isinstance(self.families, str) or not self.families:
                raise ValueError(f"families must be None or a non-empty tuple of family names, got {self.families!r}")
            for name in self.families:
                if name not in FAMILIES:
                    hint = difflib.get_close_matches(str(name), FAMILIES, n=1)
                    did = f" Did you mean {hint[0]!r}?" if hint else ""
                    raise ValueError(
                        f"families: unknown family {name!r}.{did} Available: {', '.join(sorted(FAMILIES))}"
                    )


def extract_code(answer: str) -> str:
    """The code in an answer: the first fenced block if there is one, else the whole answer."""
    found = _FENCE.search(answer)
    if found:
        return found.group(1).strip("\n")
    stripped = answer.strip()
    if stripped.startswith("```"):  # an unclosed fence: drop the opening line
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
    return stripped.strip("`\n")


def rejection_reason(answer: str, name: str) -> str:
    """Why an answer was not run, in the words a programmer needs: no code, too long, the syntax error and its
    line, or the missing function (with the functions it does define). The code is parsed on the host, never
    run: parsing executes nothing, and any parser failure on hostile input is reported as unparsable."""
    code = extract_code(answer)
    if not code:
        return f"Your answer holds no code: give the complete function {name} in a ```python block."
    if len(code) > MAX_CODE_CHARS:
        return f"Your code is longer than {MAX_CODE_CHARS // 1024} KiB and was not run; write only the function {name}."
    try:
        tree = ast.parse(code)
    except SyntaxError as error:
        line = (error.text or "").strip("\n")
        where = f" on line {error.lineno}" if error.lineno else ""
        shown = f": {line.strip()}" if line.strip() else ""
        return f"Your code was not run: syntax error{where} ({error.msg}){shown}"
    except (ValueError, RecursionError, MemoryError) as error:  # null bytes; absurd nesting
        return f"Your code was not run: Python cannot parse it ({type(error).__name__})."
    defined = sorted(
        {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    )
    also = f"; it defines {', '.join(defined[:5])}" if defined else "; it defines no function"
    return f"Your code was not run: it has no function named {name} (the task asks for def {name}(...)){also}."


def sanitize(text: str) -> str:
    """Keep feedback inside the observation charset (tracebacks may carry any character)."""
    return "".join(ch if ch in TEXT_CHARSET else "?" for ch in text)


class CodeExecEnv(TextEnv):  # noqa: D101 (its docstring is the module's, through __doc__ = __doc__)
    __doc__ = __doc__
    action_separator = None
    action_tools = (ActionTool("submit", "Submit the complete code of the function.", "code", "Python source code."),)
    example_answer = "```python\ndef add(a: int, b: int) -> int:\n    return a + b\n```"

    config_cls = CodeExecConfig
    base_defaults = {"max_turns": 3}

    def _setup(self) -> None:
        self._family_names = tuple(sorted(self.config.families or FAMILIES))
        # Fail closed now, with the install hint, rather than at the first answer.
        self._backend = sandbox.get_backend(self.config.backend, allow_unsafe=self.config.allow_unsafe)
        self.problem: Problem | None = None
        self.best = 0.0
        self._last_report: RunReport | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_backend"] = None  # backends hold clients and pools; re-resolved after unpickling
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._backend = sandbox.get_backend(self.config.backend, allow_unsafe=self.config.allow_unsafe)

    # ---- hooks --------------------------------------------------------------------------------------
    def _generate(self) -> None:
        name = self._family_names[int(self.np_random.integers(len(self._family_names)))]
        self.problem = make_problem(name, self.np_random, num_hidden=self.config.num_hidden_tests)
        self.best = 0.0
        self._last_report = None

    def _instructions(self) -> str:
        return (
            "You are a Python programmer. Write the function described in the task, using only the standard "
            "library. Your answer is the complete code of the function (a ```python fenced block or bare code); "
            "it is run in a sandbox against the examples and against hidden tests. Your reward is the fraction "
            f"of hidden tests passed. You have {self.max_turns} attempts; after a failed attempt you see the first "
            "failing example or the error."
        )

    def _observe(self) -> str:
        return self.problem.prompt

    def _parse_action(self, text: str) -> str | None:
        code = extract_code(text)
        if not code or len(code) > MAX_CODE_CHARS:
            return None
        if not re.search(rf"\b{re.escape(self.problem.name)}\b", code):
            return None
        return code

    def _rejection_message(self, unknown: list[str]) -> str:
        return sanitize(_truncate(rejection_reason(unknown[0], self.problem.name), self.config.max_feedback_chars))

    def _apply(self, code: str) -> ActionResult:
        p = self.problem
        tests = list(p.visible) + list(p.hidden)
        expected = list(p.visible_expected) + list(p.hidden_expected)
        report = run_tests(
            self._backend,
            code,
            p.name,
            tests,
            expected,
            per_test_s=self.config.per_test_s,
            memory_mb=self.config.memory_mb,
        )
        self._last_report = report
        hidden = report.outcomes[len(p.visible) :]
        fraction = sum(o.passed for o in hidden) / len(hidden)
        reward = max(0.0, fraction - self.best)
        self.best = max(self.best, fraction)
        solved = fraction == 1.0
        return ActionResult(
            reward=reward,
            effective=True,
            terminated=solved,
            success=solved,
            message=self._feedback(report, sum(o.passed for o in hidden), len(hidden)),
        )

    def _feedback(self, report: RunReport, passed: int, total: int) -> str:
        p = self.problem
        limit = self.config.max_feedback_chars
        if passed == total:
            return f"All {total} hidden tests passed."
        # the outcomes list the visible tests, then the hidden ones: only the visible are shown
        for args, want, outcome in zip(p.visible, p.visible_expected, report.outcomes, strict=False):
            if outcome.passed:
                continue
            call = call_text(p.name, args)
            if outcome.status == "ok":
                text = f"Example failed: {call} returned {decode_value(outcome.detail)!r}, expected {want!r}."
            elif outcome.status == "load_error":
                text = f"Your code failed before the tests could run:\n{outcome.detail}"
            elif outcome.status == "error":
                text = f"Your code raised an error on the example {call}:\n{outcome.detail}"
            elif outcome.status == "timeout":
                text = f"The example {call} did not finish within {self.config.per_test_s:g} s."
            else:
                text = f"The example {call} gave no result: {outcome.detail}."
            return sanitize(_truncate(text, limit)) + f"\nHidden tests passed: {passed}/{total}."
        return (
            f"Your code passes the examples but only {passed}/{total} hidden tests. The hidden tests include edge "
            "cases (empty inputs, boundaries, repeated values); reconsider them."
        )

    def candidate_actions(self) -> tuple[str, ...]:
        """Three wrong implementations with the right signature (``return None``, the first argument, ``raise``)."""
        p = self.problem
        params = ", ".join(p.arg_names)
        first = p.arg_names[0] if p.arg_names else "None"
        return (
            f"def {p.name}({params}):\n    return None",
            f"```python\ndef {p.name}({params}):\n    return {first}\n```",
            f"def {p.name}({params}):\n    raise NotImplementedError",
        )

    def oracle(self) -> tuple[str, str]:
        """The problem's reference implementation in a code block."""
        p = self.problem
        return (f"I implement {p.name} as described and check it against the examples.", f"```python\n{p.reference}```")

    def _reset_info(self) -> dict[str, Any]:
        return {"family": self.problem.family, "function": self.problem.name}

    def _step_info(self) -> dict[str, Any]:
        report = self._last_report
        info: dict[str, Any] = {"family": self.problem.family, "best_fraction": self.best}
        if report is not None:
            hidden = report.outcomes[len(self.problem.visible) :]
            info.update(
                tests_passed=sum(o.passed for o in hidden),
                tests_total=len(hidden),
                sandbox_backend=report.backend,
                sandbox_unsafe=report.unsafe,
            )
        self._last_report = None
        return info


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: limit // 3] + "\n...\n" + text[-(2 * limit) // 3 :]
