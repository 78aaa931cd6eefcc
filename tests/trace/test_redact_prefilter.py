"""The redactor's fast path (one search before the five generic shapes) redacts exactly as
applying every shape always did, on texts built to sit at the edges of each shape."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.trace.redact import _GENERIC, Redactor

PIECES = ["sk-", "sk-ant-", "bearer ", "Bearer\t", "BEARER ", "AKIA", "ghp_", "gho_", "ghx_", "a" * 16, "B" * 30,
          "0123456789", "-", "_", " ", "\n", "é", "K", "ſ", "x", "Authorization: "]


def every_shape(text: str) -> str:
    for pat in _GENERIC:
        text = pat.sub("[REDACTED]", text)
    return text


@settings(max_examples=800, deadline=None)
@given(st.lists(st.sampled_from(PIECES) | st.text(max_size=5), max_size=14).map("".join))
def test_fast_path_redacts_as_every_shape_did(text: str) -> None:
    assert Redactor().text(text) == every_shape(text)


def as_before(secrets: dict[str, str], text: str) -> str:
    """The redactor's text() as it was: secrets sorted longest first at every call, then every shape."""
    kept = {v: k for k, v in secrets.items() if v and len(v) >= 6}
    for value, name in sorted(kept.items(), key=lambda kv: -len(kv[0])):
        if value in text:
            text = text.replace(value, f"[REDACTED:{name}]")
    return every_shape(text)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["k1", "k2", "k3", "k4"]), st.text("abcsk-_ ", min_size=0, max_size=12), max_size=4),
       st.lists(st.sampled_from(PIECES + ["abc", "sk-abcabc", "cab"]), max_size=10).map("".join))
def test_known_secrets_as_before(secrets: dict[str, str], text: str) -> None:
    assert Redactor(secrets).text(text) == as_before(secrets, text)
