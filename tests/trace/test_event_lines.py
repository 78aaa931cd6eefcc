"""A trace line is an event when ``TraceEvent.model_validate(json.loads(line))`` says so. The one
parser every reader uses (``events_of_lines``) asks pydantic's JSON parser first, which is faster;
on any line, hostile ones included (duplicate keys, NaN and infinities, integers past 64 bits,
lone surrogate escapes, numbers as strings, foreign fields), it must give exactly that event or
skip exactly that line. The scorer's reading of a trial folder decodes lines with msgspec first
(``event_views``): the same fields, field by field, or the same skip."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.trace.event_view import EventView, event_views
from assay.trace.events import TraceEvent
from assay.trace.writer import events_of_lines


def _reference(line: str) -> TraceEvent | None:
    try:
        return TraceEvent.model_validate(json.loads(line))
    except (ValueError, TypeError):
        return None


NUMBERS = ["0", "1", "-1", "2", "1.0", "1.5", "-0", "-0.0", "1e400", "-1e400", "1E5", "0.1", "1.0000000000000002",
           "123456789012345678901234567890", "18446744073709551616", "NaN", "Infinity", "-Infinity", "01", "1."]
STRINGS = ['"t"', '"log"', '"tool_call"', '"agent"', '"gateway"', '"nope"', '"3"', '"1.5"', '"\\ud800"',
           '"\\udc00x"', '"\\ud83d\\ude00"', '"\\u0000"', '"caf\\u00e9"', '"tab\\there"', '"\u00e9"', '"\\/"', '""']
LITERALS = ["true", "false", "null"]
SCALAR = st.sampled_from(NUMBERS + STRINGS + LITERALS)
KEYS = st.sampled_from(['"seq"', '"ts"', '"trial_id"', '"attempt"', '"source"', '"kind"', '"data"', '"extra"',
                        '"x"', '"usage"', '"arguments"', '"a\\u0000"'])


def _value(depth: int) -> st.SearchStrategy[str]:
    if depth == 0:
        return SCALAR
    inner = _value(depth - 1)
    return st.one_of(SCALAR,
                     st.lists(st.tuples(KEYS, inner), max_size=4).map(
                         lambda kv: "{" + ",".join(f"{k}:{v}" for k, v in kv) + "}"),
                     st.lists(inner, max_size=3).map(lambda xs: "[" + ",".join(xs) + "]"))


def _event_text(fields: dict[str, str], extra: list[tuple[str, str]]) -> str:
    pairs = [(f'"{k}"', v) for k, v in fields.items()] + extra
    return "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"


def _mostly(valid: list[str], odd: list[str]) -> st.SearchStrategy[str]:
    """A field's text: usually one a writer would put there, sometimes not (so both the accepted
    and the refused lines are drawn often)."""
    return st.one_of(*[st.sampled_from(valid)] * 5, st.sampled_from(odd))


OBJECT = st.lists(st.tuples(KEYS, _value(2)), max_size=4).map(lambda kv: "{" + ",".join(f"{k}:{v}" for k, v in kv) + "}")
FIELDS = st.fixed_dictionaries({
    "seq": _mostly(["0", "3"], ['"3"', "-1", "1.0", "1.5", "true", "123456789012345678901234567890"]),
    "ts": _mostly(["1.0", "1", "1700000000.123456"], ['"1.5"', "NaN", "Infinity", "1e400", "true", "null"]),
    "trial_id": _mostly(['"t"', '"\\u00e9t"'], ['"\\ud800"', "5"]),
    "attempt": _mostly(["1", "2"], ["1.0", "0", "true", '"2"', "18446744073709551616"]),
    "source": _mostly(['"agent"', '"gateway"'], ['"bogus"']),
    "kind": _mostly(['"tool_call"', '"log"', '"model_response"'], ['"bogus"']),
    "data": st.one_of(OBJECT, OBJECT, OBJECT, _value(1)),
})


LINES = dict(fields=FIELDS,
             extra=st.one_of(st.just([]), st.just([]), st.lists(st.tuples(KEYS, _value(1)), max_size=2)),
             drop=st.one_of(st.just(set()), st.just(set()),
                            st.sets(st.sampled_from(["seq", "ts", "data", "kind"]), max_size=1)),
             tail=st.sampled_from(["", "", " ", "x", "}", "\t"]))


@settings(max_examples=600, deadline=None)
@given(**LINES)
def test_each_line_is_the_event_the_standard_parser_makes(fields: dict[str, str], extra: list[tuple[str, str]],
                                                         drop: set[str], tail: str) -> None:
    _holds(events_of_lines, repr, fields, extra, drop, tail)


def _holds(read: Callable[[list[str]], Iterable[object]], seen: Callable[[object], object], fields: dict[str, str],
           extra: list[tuple[str, str]], drop: set[str], tail: str) -> None:
    """The line these draws make, read by ``read``: the reference's event as ``seen`` shows it, or nothing."""
    for k in drop:
        fields.pop(k)
    line = _event_text(fields, extra) + tail
    want = _reference(line.strip())
    got = list(read([line]))
    if want is None:
        assert got == [], line
    else:
        assert len(got) == 1 and seen(got[0]) == seen(want), line


def test_the_fast_parser_is_trusted_only_where_it_accepts() -> None:
    """The known disagreement: a lone surrogate escape, which pydantic's parser refuses and the
    standard library reads; the line is still the event it always was."""
    line = ('{"seq": 0, "ts": 1.0, "trial_id": "t", "attempt": 1, "source": "agent", "kind": "log", '
            '"data": {"x": "\\ud800"}}')
    [ev] = events_of_lines([line])
    assert ev.data == {"x": "\ud800"}
    assert [e.seq for e in events_of_lines(["", "  ", '{"seq": 1', line, "[1]"])] == [0]


FIELD_NAMES = ("seq", "ts", "trial_id", "attempt", "source", "kind", "data")


def _seen(ev: object) -> tuple[str, ...]:
    """What a reader of the event sees, field by field, types included (repr tells 1, 1.0, True,
    -0.0, inf and the order of a dict's keys apart)."""
    return tuple(repr(getattr(ev, name)) for name in FIELD_NAMES)


#: lines a writer would mostly write: every field valid, with now and then a foreign field or a torn end
VALID = st.fixed_dictionaries({
    "seq": st.sampled_from(["0", "3", "-0", "18446744073709551616"]),
    "ts": st.sampled_from(["1.0", "1", "-0", "-0.0", "1700000000.123456", "1E5", "1.0000000000000002"]),
    "trial_id": st.sampled_from(['"t"', '"\\u00e9t"', '"\\ud800"', '""']),
    "attempt": st.sampled_from(["1", "2", "123456789012345678901234567890"]),
    "source": st.sampled_from(['"agent"', '"gateway"', '"verifier"']),
    "kind": st.sampled_from(['"tool_call"', '"log"', '"model_response"', '"attempt_ended"']),
    "data": OBJECT,
})
NOT_JSON = ("NaN", "Infinity", "-Infinity", "01", "1.")
PLAIN = st.sampled_from([x for x in NUMBERS + STRINGS + LITERALS if x not in NOT_JSON])


@settings(max_examples=800, deadline=None)
@given(fields=st.one_of(FIELDS, VALID, VALID),
       extra=st.one_of(st.just([]), st.just([]), st.lists(st.tuples(KEYS, PLAIN), max_size=2)),
       drop=LINES["drop"], tail=st.sampled_from(["", "", "", " ", "x", "}"]))
def test_each_line_is_the_event_the_scorers_reading_makes(fields: dict[str, str], extra: list[tuple[str, str]],
                                                         drop: set[str], tail: str) -> None:
    _holds(event_views, _seen, fields, extra, drop, tail)


def test_an_ordinary_line_is_read_by_msgspec_and_a_refused_one_the_reference_way() -> None:
    """The comparison above compares both readers: an ordinary line gives a view, a lone surrogate
    escape (msgspec refuses it) the reference event, and blank, torn and foreign lines nothing."""
    plain = ('{"seq": 3, "ts": 1.5, "trial_id": "t", "attempt": 2, "source": "agent", "kind": "tool_call", '
             '"data": {"name": "shell", "arguments": {"command": "ls"}}}')
    odd = plain.replace('"ls"', '"\\ud800"')
    got = list(event_views(["", plain, " ", '{"seq": 1', odd, "[1]", plain.replace('"seq": 3', '"seq": -3')]))
    assert [type(e) for e in got] == [EventView, TraceEvent]
    assert _seen(got[0]) == _seen(_reference(plain)) and got[1].data["arguments"]["command"] == "\ud800"
