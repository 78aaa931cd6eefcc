"""Sandbox: one interface, several backends (host, bubblewrap, ...)."""

from assay.sandbox.base import (
    BackendStatus, CleanupReport, Endpoint, ExecResult, Mount, Sandbox, SandboxBackend, SandboxSpec,
)
from assay.sandbox.registry import backends, default_backend_name, get_backend, register_sandbox_backend

__all__ = [
    "BackendStatus", "CleanupReport", "Endpoint", "ExecResult", "Mount", "Sandbox", "SandboxBackend",
    "SandboxSpec", "backends", "default_backend_name", "get_backend", "register_sandbox_backend",
]
