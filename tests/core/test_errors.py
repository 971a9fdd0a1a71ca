"""Errors shown as one line: the message collapsed and cut, or the type's name when there is no message."""

from __future__ import annotations

from sinkbench.errors import described, one_line


def test_a_multi_line_message_becomes_one_cut_line() -> None:
    error = ValueError("first line\n  second   line\n" + "x" * 500)
    assert one_line(error, 30) == "first line second line xxxxxxx"
    assert described(error, 10) == "ValueError: first line"


def test_an_error_without_a_message_is_named_by_its_type() -> None:
    assert one_line(NotImplementedError()) == "NotImplementedError"
    assert described(NotImplementedError()) == "NotImplementedError"
    assert described(KeyError("sliding_attention")) == "KeyError: 'sliding_attention'"
