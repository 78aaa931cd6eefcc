"""Model backends behind the gateway: scripted, replay, upstream, local (one registry)."""

from assay.gateway.backends.base import BackendSession, ModelBackend, backend_names, make_backend, register_model_backend

__all__ = ["BackendSession", "ModelBackend", "backend_names", "make_backend", "register_model_backend"]
