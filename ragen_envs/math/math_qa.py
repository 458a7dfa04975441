"""Math questions from any question/answer dataset: yours, or the small sample we ship.

## Description
``gym.make("ragen/MathQA-v0", path="train.jsonl")`` serves the records of a local JSONL, JSON, CSV or
Parquet file (Parquet needs pyarrow, in the ``report`` extra), or of a Hugging Face dataset name
(``path="openai/gsm8k", subset="main"``) when the ``datasets`` library and a network (or its cache) are
available. Field names of MetaMathQA (``query``/``response``), GSM8K (``question``/``answer``) and MATH
(``problem``/``solution``) exports are detected; ``question_field``/``answer_field`` name others. The final
answer is read by each dataset's convention (``The answer is: 42``, ``#### 42``, ``\\boxed{42}``). Without
``path`` the env serves ``ragen_envs/data/math_qa_sample.jsonl``, 32 problems we wrote (GSM8K format).
The seed picks the record (uniformly, through ``np_random``), so the same seed gives the same question.

## Action Space
A response whose answer is the final answer, e.g. ``<think>…</think><answer>18</answer>``. Numbers are
compared by exact value after tolerant extraction (``1,250``, ``$8.75``, ``25%``, ``8/3``, ``\\boxed{}``,
units); answers that are not numbers (``\\sqrt{3}``, ``(1, 2)``) by normalized text (RAGEN's lowercase,
whitespace-free comparison, plus LaTeX noise removal). See :mod:`ragen_envs.math.answers`.

## Observation Space
The question text (a dataset's characters are added to the spaces' charset).

## Rewards
``1 / 2**attempt`` for a correct answer, 0 for a wrong one, ``format_penalty`` (-0.1) for a response
without the answer format (RAGEN's MetaMathQA rule).

## Episode End
Terminated on a correct answer or a wrong answer at the last turn; truncated after ``max_turns`` (1, as
RAGEN's MetaMathQA) turns of format errors. With more turns a wrong answer gets "Incorrect, try again.".

## Version History
- v0: initial release.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ragen_envs.arguments import EnvConfig, argument
from ragen_envs.core import TEXT_CHARSET
from ragen_envs.math.answer_env import SingleAnswerEnv
from ragen_envs.math.answers import parse_number
from ragen_envs.math.qa_data import QARecord, load_records


@dataclass(frozen=True)
class MathQAConfig(EnvConfig):
    """Which dataset to serve, and how to read it."""

    path: str | os.PathLike | None = argument(
        None,
        "A local JSONL, JSON, CSV or Parquet file, or a Hugging Face dataset name (``None``: the shipped sample).",
        allowed="a path or a dataset name",
    )
    question_field: str | None = argument(None, "The question's column (``None``: detected).", allowed="a column name")
    answer_field: str | None = argument(None, "The answer's column (``None``: detected).", allowed="a column name")
    split: str = argument("train", "The Hugging Face dataset's split.", allowed="a split name")
    subset: str | None = argument(
        None, "The Hugging Face dataset's subset (configuration name).", allowed="a subset name"
    )


class MathQAEnv(SingleAnswerEnv):  # noqa: D101 (its docstring is the module's, through __doc__ = __doc__)
    __doc__ = __doc__
    answer_hint = "a number (an integer, a decimal or a fraction such as 3/4), or the simplest exact expression"

    config_cls = MathQAConfig

    def _setup(self) -> None:
        c = self.config
        self.records = load_records(
            c.path, question_field=c.question_field, answer_field=c.answer_field, split=c.split, subset=c.subset
        )
        seen = set()
        for record in self.records:
            seen.update(record.question, record.answer)
        # Everything we show or accept must be in the Text spaces' charset: add the dataset's characters.
        self.extra_charset = "".join(sorted(seen - TEXT_CHARSET))
        super()._setup()
        self.path = c.path
        self.index = 0
        self.record: QARecord | None = None

    def _generate(self) -> None:
        self.index = int(self.np_random.integers(len(self.records)))
        self.record = self.records[self.index]
        self.question = self.record.question
        self.reference = self.record.answer
        self.reference_value = parse_number(self.reference)
        self.worked_solution = "I recall the reference answer."
        self.attempts = 0

    def _task_instructions(self) -> str:
        return "You are solving math problems. Work the problem out, then give the final answer."

    def _reset_info(self) -> dict[str, Any]:
        return {"answer": self.reference, "index": self.index, "source": self.record.where}
