"""The viewer's page frame and the one way it shows text: everything from a run is hostile.

``shown`` escapes HTML, makes terminal escapes and other control characters visible (``\\x1b``)
and the CSS folds over-long lines; nothing on a page comes from outside the viewer (no CDN, no
outside font or script)."""

from __future__ import annotations

import re
from html import escape

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]")
#: at most this many characters of one text are shown (the rest is said to be cut, never hidden silently)
MAX_TEXT = 200_000

CSS = """
body{font-family:system-ui,sans-serif;margin:1.2em;color:#222;max-width:1400px}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top}
th a{color:inherit}pre,.txt{white-space:pre-wrap;overflow-wrap:anywhere;max-width:100%;font-family:monospace;font-size:.9em}
.ok,.PASSED,.pass{color:#176317}.bad,.FAILED,.fail,.tampered,.unreadable{color:#a11}.warn{color:#8a5a00}
nav a{margin-right:1em}.figs{display:flex;flex-wrap:wrap;gap:1em}.figs>div{flex:1 1 420px;min-width:0}
.figs svg{max-width:100%;height:auto}.st{font-weight:bold}form.inline{display:inline}
button{margin:.1em}.dim{color:#777}
"""


def shown(text: object, *, limit: int = MAX_TEXT) -> str:
    """Text from a run as safe HTML: escaped, control characters visible, cut with a note."""
    s = text if isinstance(text, str) else str(text)
    cut = len(s) > limit
    s = _UNSAFE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}",
                    s[:limit])
    return escape(s) + (f"\n[... {len(text if isinstance(text, str) else str(text)) - limit} more characters not shown]"
                        if cut else "")


def page(title: str, body: str, *, script: str = "") -> str:
    """One whole page: inline style, an optional inline script of the viewer's own."""
    js = f"<script>{script}</script>" if script else ""
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{shown(title)}</title>"
            f"<meta name='viewport' content='width=device-width'><style>{CSS}</style></head><body>"
            f"<nav><a href='/'>runs</a><a href='/compare'>compare</a></nav>{body}{js}</body></html>")


def pct(v: float | None) -> str:
    return "—" if v is None else f"{100 * v:.1f} %"


def usd(v: float | None) -> str:
    return "—" if v is None else f"${v:.4f}"
