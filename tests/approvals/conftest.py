"""The world service fixture, shared with tests/worlds."""

from tests.worlds.conftest import service  # noqa: F401
