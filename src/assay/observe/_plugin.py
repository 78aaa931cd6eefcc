"""The hook marker of run plugins, without importing the engine (observe sits beside score).

pluggy matches implementations to the specifications of ``assay.run.hooks`` by the project name
alone, so this marker is the same as ``assay.run.hooks.hookimpl``."""

from __future__ import annotations

import pluggy

hookimpl = pluggy.HookimplMarker("assay")
