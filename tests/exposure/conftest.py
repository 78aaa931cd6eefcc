from __future__ import annotations

import pytest

from assay.sandbox.registry import get_backend


@pytest.fixture
def bwrap() -> str:
    if not get_backend("bwrap").status().usable:
        pytest.skip("bubblewrap is not usable here")
    return "bwrap"
