"""``benchmarks/bench_trainers.py`` refuses a wrong setting or precision with one line naming the choices, before
it loads a model or starts a round (a typo must not cost a half-finished benchmark)."""

from __future__ import annotations

import pytest

from tests.helpers.paths import load_script


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--precision", "fp16"], "--precision: unknown 'fp16'; choose from fp32, bf16"),
        (["--envs", "sokoban,sokoban4"], "--envs: unknown setting 'sokoban4'; choose from bandit, sokoban"),
    ],
)
def test_bad_argument_is_one_line(argv, expected, capsys):
    with pytest.raises(SystemExit) as exit_info:
        load_script("benchmarks/bench_trainers.py").main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert expected in err
    assert "Traceback" not in err
