"""The scripted user: keyed on what the world recorded in the agent's last turn, off script when
nothing fits, and stop words as whole words."""

from __future__ import annotations

from assay.conversations.script import TurnFacts, scripted_line, stop_word
from assay.spec.conversation import ConversationSpec


def _conv(turns: list[dict], **kw) -> ConversationSpec:
    return ConversationSpec.model_validate({"turns": turns, **kw})


def test_reply_rules_key_on_the_worlds_record_and_the_first_match_speaks() -> None:
    conv = _conv([{"user": "book it"}, {"reply": [
        {"when": {"called": "user.ask_clarification", "not_called": "ledger.record_entry"}, "user": "Household."},
        {"when": {"said": r"\bdone\b"}, "user": "Thanks."}], "otherwise": "Hm?"}])
    turn = conv.turns[1]
    asked = TurnFacts(1, executed=("user.ask_clarification",), final_text="I asked. done")
    assert (scripted_line(turn, asked).text, scripted_line(turn, asked).rule) == ("Household.", 0)
    both = TurnFacts(1, executed=("user.ask_clarification", "ledger.record_entry"), final_text="DONE")
    assert (scripted_line(turn, both).text, scripted_line(turn, both).rule) == ("Thanks.", 1)
    nothing = TurnFacts(1, executed=(), final_text="I recorded it")  # a claim is not an executed call
    assert scripted_line(turn, nothing).text == "Hm?"


def test_no_rule_and_no_otherwise_is_off_script() -> None:
    conv = _conv([{"user": "a"}, {"reply": [{"when": {"called": "user.refuse"}, "user": "ok"}]}])
    line = scripted_line(conv.turns[1], TurnFacts(1, executed=("ledger.record_entry",)))
    assert line.text is None and line.rule is None


def test_stop_words_match_whole_words_case_insensitively() -> None:
    conv = _conv([{"user": "a"}], stop_words=["bye", "that's all"])
    assert stop_word(conv, "OK, BYE now") == "bye"
    assert stop_word(conv, "That's all, thanks") == "that's all"
    assert stop_word(conv, "goodbye is not the word") is None


def test_a_said_rule_over_the_agents_text_ends_in_bounded_time() -> None:
    """An ordinary pattern, the agent's 300,000 digits: the match runs in the harness's own event
    loop between turns (it held it past 120 s before spec/bounded_re). Past its time the rule does
    not hold (unknown is not a match) and `otherwise` speaks; it never holds the conversation."""
    import json
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    child = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from assay.conversations.script import TurnFacts, scripted_line
        from assay.spec.conversation import ConversationSpec
        conv = ConversationSpec.model_validate({{"turns": [{{"user": "a"}}, {{"reply": [
            {{"when": {{"said": r"^Total: .*[0-9]+ EUR$"}}, "user": "Thanks."}}], "otherwise": "Hm?"}}]}})
        hostile = TurnFacts(1, final_text="Total: " + "1" * 300_000 + "\\n")
        honest = TurnFacts(1, final_text="Total: 12 EUR")
        line = scripted_line(conv.turns[1], hostile)
        print(json.dumps([line.text, scripted_line(conv.turns[1], honest).text]))
    """)
    try:
        done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        raise AssertionError("the scripted user's match did not end within 120 s") from None
    assert done.returncode == 0, done.stderr[-2000:]
    hostile, honest = json.loads(done.stdout.strip().splitlines()[-1])
    assert (hostile, honest) == ("Hm?", "Thanks.")
