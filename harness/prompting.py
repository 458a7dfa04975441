"""The RAGEN-style prompt pieces, kept importable here; their home is :mod:`harness.transcript`."""

from harness.transcript import build_context, prefill_for, record_messages, user_message

__all__ = ["build_context", "prefill_for", "record_messages", "user_message"]
