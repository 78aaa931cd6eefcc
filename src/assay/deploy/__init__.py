"""Deploying assay beyond one machine: manifests for Kubernetes (KubeRay)."""
