"""Production traces are imported as candidate cases, scrubbed of secrets and personal data first
(`cases/scrub.py`). What a trace holds came from the product's users: a line built to make a rule
backtrack must not stall the import. The ``assignment`` rule began ``\\b[\\w-]*`` before its keyword,
so every word start of ``a-a-a-…`` scanned the rest of the run: 40 KB took 44 s."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.cases.scrub import RULES

HANG_GUARD_S = 60  # a guard against a hang, not a synchronisation: the scrub ends in milliseconds
#: the rule as it was: the reference the linear one is held to (the same text out)
REFERENCE = re.compile(r"(?i)\b([\w-]*(?:api[_-]?key|token|secret|passw(?:or)?d|credential)s?)(\s*[:=]\s*)"
                       r"(?!\[REDACTED)[\"']?[^\s\"',;]{6,}[\"']?")
RULE = next(pat for name, pat, _ in RULES if name == "assignment")
REPL = next(repl for name, _, repl in RULES if name == "assignment")


@pytest.mark.parametrize("unit", ["a-", "1-", "x_-"])
def test_a_line_built_to_backtrack_is_scrubbed_in_linear_time(unit: str) -> None:
    code = ("import sys; from assay.cases.scrub import RULES; "
            "[p.search(sys.stdin.read()) for n, p, _ in RULES if n == 'assignment']")
    try:
        done = subprocess.run([sys.executable, "-c", code], input=unit * 200_000, capture_output=True, text=True,
                              timeout=HANG_GUARD_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the assignment rule did not end within {HANG_GUARD_S} s")
    assert done.returncode == 0, done.stderr[-2000:]


PIECES = ["a", "-", "_", "x1", " ", ":", "=", "'", '"', ",", "token", "TOKEN", "tokens", "api_key", "api-key",
          "apikey", "secret", "password", "passwd", "credential", "credentials", "abcdefgh", "[REDACTED:x]", "é", "\t"]


@settings(max_examples=800, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=16))
def test_the_rule_scrubs_what_it_scrubbed(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert RULE.sub(REPL, text) == REFERENCE.sub(r"\1\2[REDACTED:assignment]", text)


def test_an_assignment_is_still_scrubbed_with_its_name_kept() -> None:
    assert RULE.sub(REPL, "export MY_API_KEY=abcdef123 && x") == "export MY_API_KEY=[REDACTED:assignment] && x"
    assert RULE.sub(REPL, 'db-password: "hunter2hunter2"') == "db-password: [REDACTED:assignment]"
