"""The plan-then-unplanned order without a set of ids, against the set it replaced."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from assay.store.trial_order import has_repeats, share_names, unplanned

IDS = st.lists(st.sampled_from(["a", "b", "c", "d", "e", "a.r1", "a.r10", "a.r2", "Z", ""]), max_size=12)


@given(planned=IDS, on_disk=IDS)
def test_unplanned_is_the_set_difference_in_listing_order(planned: list[str], on_disk: list[str]) -> None:
    disk = sorted(set(on_disk))
    seen = set(planned)
    assert list(unplanned(planned, disk)) == [t for t in disk if t not in seen]
    assert has_repeats(planned) == (len(seen) < len(planned))


@given(planned=IDS, on_disk=IDS)
def test_shared_names_are_the_plan_objects_and_equal(planned: list[str], on_disk: list[str]) -> None:
    planned = [p + "" if not p else "".join([p]) for p in planned]
    disk = sorted({"".join(list(t)) for t in on_disk})  # fresh string objects, as a listing gives
    before = list(disk)
    share_names(disk, planned)
    assert disk == before
    ids = {id(p) for p in planned}
    assert all((id(d) in ids) == (d in planned) for d in disk if len(d) > 1)  # 1-character strings are cached
