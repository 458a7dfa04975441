"""The one capped reader every sandbox backend feeds (bwrap, the warm pool and Docker read through it)."""

from __future__ import annotations

from ragen_envs.sandbox.base import START_MARK, CappedOutput, WallClock


def _output(cap: int) -> CappedOutput:
    return CappedOutput(cap, WallClock(wall_s=5.0, launched=0.0))


def test_each_stream_keeps_up_to_the_cap_and_flags_the_rest():
    output = _output(cap=6)
    output.add(b"abcd", stderr=False)
    assert not output.exceeded
    output.add(b"ef", stderr=False)  # exactly the cap: nothing lost yet
    assert bytes(output.stdout) == b"abcdef" and not output.exceeded
    output.add(START_MARK.encode() + b"err", stderr=True)  # stderr has its own cap
    assert bytes(output.stderr) == b"err" and not output.exceeded
    output.add(b"g", stderr=False)
    assert bytes(output.stdout) == b"abcdef" and output.exceeded


def test_stderr_goes_through_the_clock_and_a_held_back_prefix_is_kept_at_the_end():
    output = _output(cap=100)
    mark = START_MARK.encode()
    output.add(mark[:3], stderr=True)  # could be the start of the mark: held back, the clock not started
    assert bytes(output.stderr) == b"" and output.clock.started is None
    output.stderr_closed()  # the stream ended: the held-back bytes were output after all
    assert bytes(output.stderr) == mark[:3]
    output.add(mark + b"late", stderr=True)
    assert output.clock.started is not None
