"""The text transformations of the variant rules: pure, deterministic functions of the prompt.

Each keeps the prompt's trailing newline and tidies the spacing a removal leaves behind, so a
variant differs from its base by the rule and nothing else.
"""

from __future__ import annotations

import re
import unicodedata

from assay.variants.rules import DropWords, Glossary, NumberFormat, ReorderClauses, Step, Strip, Swap

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4}")
_NUMBER = re.compile(r"(?<![\w.,])(\d+)(?:\.(\d+))?(?![\w])")
_CLAUSE = re.compile(r"\s*[,;，；]\s*")


def _split_end(text: str) -> tuple[str, str]:
    body = text.rstrip()
    return body, text[len(body):]


def _tidy(text: str) -> str:
    while True:
        before = text
        text = re.sub(r"[ \t]{2,}", " ", text)
        text = re.sub(r" +([,.;:!?，。；：])", r"\1", text)
        text = re.sub(r"[,;，；]\s*([,;，；.。])", r"\1", text)
        if text == before:
            return text.strip(" \t")


def _term(term: str) -> re.Pattern[str]:
    """A whole-word, case-insensitive pattern for Latin terms; a plain literal for CJK ones."""
    esc = re.escape(term)
    if term[:1].isascii() and term[-1:].isascii():
        return re.compile(rf"(?<!\w){esc}(?!\w)", re.IGNORECASE)
    return re.compile(esc)


def drop_words(text: str, words: list[str]) -> str:
    body, end = _split_end(text)
    for w in sorted(words, key=len, reverse=True):
        body = _term(w).sub("", body)
    return _tidy(body) + end


def reorder_clauses(text: str) -> str:
    body, end = _split_end(text)
    stop = body[-1] if body and body[-1] in ".。!?" else ""
    core = body[: len(body) - len(stop)]
    parts = [p for p in _CLAUSE.split(core) if p]
    if len(parts) < 2:
        return text
    return ", ".join(reversed(parts)) + stop + end


def _is_punct(ch: str) -> bool:
    return unicodedata.category(ch).startswith("P")


def strip(text: str, what: list[str]) -> str:
    body, end = _split_end(text)
    out = []
    for i, ch in enumerate(body):
        if "spaces" in what and ch.isspace():
            continue
        if "punctuation" in what and _is_punct(ch):
            prev, nxt = body[i - 1: i], body[i + 1: i + 2]
            if not (prev.isdigit() and nxt.isdigit()):
                continue
        out.append(ch)
    return "".join(out) + end


def swap(text: str, old: str, new: str) -> str:
    return text.replace(old, new)


def _format_number(whole: str, frac: str | None, style: str) -> str:
    if style == "two_decimals":
        return f"{whole}.{(frac or '').ljust(2, '0')}"
    grouped = f"{int(whole):,}"
    if style == "grouped":
        return grouped + (f".{frac}" if frac else "")
    return grouped.replace(",", ".") + "," + (frac or "").ljust(2, "0")  # decimal_comma


def number_format(text: str, style: str) -> str:
    """Reformat amounts outside dates; a number already in the target shape is left alone."""
    spans = [m.span() for m in _DATE.finditer(text)]

    def repl(m: re.Match[str]) -> str:
        if any(a <= m.start() < b for a, b in spans):
            return m.group(0)
        return _format_number(m.group(1), m.group(2), style)

    return _NUMBER.sub(repl, text)


def glossary(text: str, terms: dict[str, str]) -> str:
    for src in sorted(terms, key=len, reverse=True):
        text = _term(src).sub(terms[src].replace("\\", "\\\\"), text)
    return text


def apply_step(text: str, step: Step) -> str:
    """One step of a rule applied to the prompt."""
    if isinstance(step, DropWords):
        return drop_words(text, step.drop_words)
    if isinstance(step, ReorderClauses):
        return reorder_clauses(text)
    if isinstance(step, Strip):
        return strip(text, list(step.strip))
    if isinstance(step, Swap):
        return swap(text, step.swap.from_, step.swap.to)
    if isinstance(step, NumberFormat):
        return number_format(text, step.number_format)
    if isinstance(step, Glossary):
        return glossary(text, step.glossary)
    raise TypeError(f"unknown step {step!r}")
