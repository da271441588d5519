"""The WebSocket's JSON: client messages checked at the edge, events formatted."""

import json

import pytest

from app import wire
from engine.events import Done, Failed, PrefillProgress, Prefilled, Queued, Token, Tokenized
from engine.stopwatch import summarize

LIMIT, DEFAULT = 1024, 64


def parse(raw):
    return wire.parse_message(raw, LIMIT, DEFAULT)


def test_a_full_generate_message():
    msg = parse(json.dumps({"type": "generate", "prompt": "hi", "max_tokens": 5, "temperature": 0.7,
                            "top_k": 3, "seed": 9}))
    assert msg == wire.Generate("hi", 5, wire.SamplingParams(0.7, 3, 9))


def test_defaults_are_greedy_with_the_default_length():
    msg = parse('{"type": "generate", "prompt": "hi", "top_k": null, "seed": null, "temperature": null}')
    assert msg.max_tokens == DEFAULT and msg.sampling.greedy


def test_cancel():
    assert isinstance(parse('{"type": "cancel"}'), wire.Cancel)


@pytest.mark.parametrize("raw, message", [
    (b"\x00binary", "binary messages are not accepted"),
    ("not json", "not valid JSON"),
    ('{"type": "generate", "prompt": "x", "temperature": NaN}', "NaN is not a number JSON allows"),
    ('{"type": "generate", "prompt": "x", "max_tokens": Infinity}', "Infinity is not a number"),
    ("[" * 50_000 + "]" * 50_000, "nested too deeply"),
    ('["generate"]', "must be a JSON object"),
    ('{"prompt": "x"}', "unknown message type None"),
    ('{"type": "shout"}', "unknown message type 'shout'"),
    ('{"type": "generate"}', 'needs a "prompt"'),
    ('{"type": "generate", "prompt": 42}', "prompt must be a string, not a number"),
    ('{"type": "generate", "prompt": ["a"]}', "prompt must be a string, not an array"),
    ('{"type": "generate", "prompt": "x", "max_tokens": 0}', "max_tokens must be a whole number from 1 to 1024"),
    ('{"type": "generate", "prompt": "x", "max_tokens": 1025}', "from 1 to 1024, got 1025"),
    ('{"type": "generate", "prompt": "x", "max_tokens": 2.5}', "max_tokens must be"),
    ('{"type": "generate", "prompt": "x", "max_tokens": true}', "max_tokens must be"),
    ('{"type": "generate", "prompt": "x", "max_tokens": 1e400}', "max_tokens must be"),
    ('{"type": "generate", "prompt": "x", "temperature": -1}', "temperature must be a finite number >= 0"),
    ('{"type": "generate", "prompt": "x", "temperature": "warm"}', "temperature must be"),
    ('{"type": "generate", "prompt": "x", "top_k": 0}', "top_k must be"),
    ('{"type": "generate", "prompt": "x", "seed": -5}', "seed must be"),
    ('{"type": "generate", "prompt": "x", "max_token": 5}', "unknown field(s) max_token"),
])
def test_bad_messages_are_named(raw, message):
    with pytest.raises(wire.WireError) as caught:
        parse(raw)
    assert message in str(caught.value)


def test_events_become_messages_timed_from_arrival():
    arrived = 100.0
    stats = summarize(arrived, 100.001, 100.002, 100.5, [100.6, 100.7], prompt_tokens=3)
    messages = [wire.event_message(e, arrived) for e in [
        Queued(100.0005, 2),
        Tokenized(100.002, [72, 0xC3, 0xA9], [b"H", b"\xc3", b"\xa9"]),
        PrefillProgress(100.3, 0.5),
        Prefilled(100.5, 3, 3 * 1024),
        Token(100.6, 0, 65, "A", 3 * 1024),
        Done(100.8, "length", stats),
        Done(100.9, "cancelled", None),
        Failed(101.0, "boom"),
    ]]
    assert [m["type"] for m in messages] == ["queued", "tokenized", "prefill_progress", "prefilled", "token",
                                              "done", "done", "error"]
    assert messages[0]["t_ms"] == pytest.approx(0.5) and messages[0]["position"] == 2
    assert messages[1]["pieces"] == ["H", "\\xc3", "\\xa9"]
    assert messages[4] == {"type": "token", "t_ms": pytest.approx(600), "index": 0, "id": 65, "text": "A",
                           "kv_bytes": 3072}
    done = messages[5]["stats"]
    assert done["ttft_ms"] == pytest.approx(600) and done["itl_p50_ms"] == pytest.approx(100)
    assert done["total_ms"] == pytest.approx(700) and done["prefill_ms"] == pytest.approx(498)
    assert messages[6]["stats"] is None and messages[6]["finish_reason"] == "cancelled"
    assert messages[7]["message"] == "boom"
    assert all(json.loads(wire.dumps(m)) for m in messages)  # all JSON-ready


def test_model_text_is_sent_as_is_not_escaped_for_html():
    message = wire.dumps({"type": "token", "text": "<script>é"})
    assert json.loads(message)["text"] == "<script>é"
