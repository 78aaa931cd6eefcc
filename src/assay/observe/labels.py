"""Label policy for every exported series: low cardinality, nothing the agent can write.

Labels hold only names the operator chose before the run (suite, agent, category) and closed
vocabularies of the harness (end state, incident kind, severity). Trial ids, task ids and free
text never become label values: a campaign of 10^6 trials must stay a few hundred series.
"""

from __future__ import annotations

import re

from assay.records.results import EndState

#: every end state, in the order panels show them
RESULTS: tuple[str, ...] = tuple(s.value for s in EndState)
SEVERITIES: tuple[str, ...] = ("low", "medium", "high", "critical")
_KIND = re.compile(r"[a-z][a-z0-9_]{0,39}")
#: at most this many distinct incident kinds per agent; later ones are counted as ``other``
MAX_KINDS = 32


def incident_kind(value: object) -> str:
    """An incident type as a label value: a short snake_case word, else ``other``."""
    text = str(value or "").strip().lower()
    return text if _KIND.fullmatch(text) else "other"


def severity(value: object) -> str:
    """Severity as a label value; an incident without one is ``high`` (as the security gate reads it)."""
    text = str(value if value is not None else "high").strip().lower()
    return text if text in SEVERITIES else "other"
