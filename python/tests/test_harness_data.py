"""What a harness writes reaches the trainer inside the daemon's frames
(tool arguments and extra fields are passed through as the harness wrote
them): the client must decode every frame into values the trainer can use.
An outside red team's findings, against a real daemon and the test agent."""

from __future__ import annotations

import json

import pytest

from harnessd import Env
from harnessd.errors import HarnessdError, ProtocolError


def _tool_call_line(arguments: str) -> str:
    return 'rawline {"type":"tool_call","data":{"tool_name":"x","arguments":' + arguments + "}}"


def _nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def _depth(v: object) -> int:
    n = 0
    while isinstance(v, dict):
        v, n = v["a"], n + 1
    return n


def test_deeply_nested_tool_arguments_end_the_episode_as_a_protocol_error(daemons) -> None:
    """2,000 levels of a tool call's arguments (Go's decoder lets 10,000
    through; in the frame, Python's decoder raised RecursionError out of
    step() and the trainer lost the turn): the daemon refuses the line, so
    the trainer gets the turn's observation, a protocol_error naming the
    nesting; the session stays usable. Control: 100 levels arrive whole."""
    d = daemons.start(model=False)
    with Env(d.url) as env:
        env.reset()
        obs = env.step(_tool_call_line(_nested(100)))
        calls = [e for e in obs.metadata["turn_events"] if e["type"] == "tool_call"]
        assert _depth(calls[0]["data"]["arguments"]) == 100
        env.reset()
        obs = env.step(_tool_call_line(_nested(2000)))
        assert obs.done and obs.metadata["error_type"] == "protocol_error"
        assert "nested deeper than 128 levels" in obs.metadata["error"]
        env.reset()
        assert env.step("reply again").metadata["response"] == "again"


def test_the_client_decoder_refuses_what_python_cannot_decode() -> None:
    """The client's own guard, for a frame the daemon would not send (a
    server of another version, a proxy): too deep for Python's decoder is
    a ProtocolError, not a RecursionError. Control: 400 levels decode."""
    from harnessd.http import loads

    assert _depth(loads(_nested(400))) == 400
    with pytest.raises(ProtocolError, match="nested too deeply") as ei:
        loads(_nested(5000))
    assert isinstance(ei.value, HarnessdError)


def test_lone_surrogates_arrive_as_replacement_characters(daemons) -> None:
    """A "\\ud800" escape in a tool call's arguments and in an extra field
    (kept as the harness wrote them) decoded into a str that cannot be
    encoded: the trainer's print, file or tokenizer failed on it. Control:
    a valid pair arrives as its character."""
    d = daemons.start(model=False)
    line = ('rawline {"type":"tool_call","data":{"tool_name":"x","arguments":{"s":"a\\ud800b","ok":"\\ud83d\\ude00",'
            '"n":{"t":["\\udfff"]}},"note":"q\\udc80"}}')
    with Env(d.url) as env:
        env.reset()
        obs = env.step(line)
    call = [e for e in obs.metadata["turn_events"] if e["type"] == "tool_call"][0]["data"]
    assert call["arguments"]["ok"] == "\U0001F600"
    assert call["arguments"]["s"] == "a\ufffdb"
    assert call["arguments"]["n"]["t"] == ["\ufffd"]
    assert call["note"] == "q\ufffd"
    json.dumps(obs.metadata, ensure_ascii=False).encode("utf-8")  # every string encodes
