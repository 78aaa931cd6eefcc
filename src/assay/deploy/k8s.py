"""``assay k8s render``: what to apply on a Kubernetes cluster to run a campaign on KubeRay.

One RayJob (KubeRay) whose head owns the run directory (a volume of its own) and serves the
model gateway; a ``sandbox`` worker group runs the agents' sandboxes, and a ``verifier`` group
verifies each attempt's final state, shipped to it (the hidden tests are run only in those pods;
the image still carries the suite to every pod).
With ``--verifier-workers 0`` each attempt is verified on its own node instead, in a sandbox
of its own under its own uid (docs/scale.md). Around it: separate ServiceAccounts (head,
sandbox workers, verifiers) without API tokens, a NetworkPolicy that lets worker
pods reach only the head, an upstream-key Secret meant to live for one campaign, resource requests and limits,
seccomp profiles, read-only root filesystems with explicit writable volumes, and the campaign
deadline as the RayJob's ``activeDeadlineSeconds``. Plain dicts out: the caller dumps YAML.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from assay.deploy import k8s_check, k8s_images
from assay.deploy.k8s_images import TaskImage
from assay.deploy.seccomp import PROFILE_PATH, profile_json
from assay.errors import UsageError

#: the Ray resource the sandbox workers advertise (their attempt slots); the Ray executor schedules on it
SANDBOX_RESOURCE = "assay_sandbox"
#: the Ray resource verifier nodes advertise (run/cluster/verifiers.py names the same)
VERIFIER_RESOURCE = "assay_verifier"
GATEWAY_PORT = 8765
TOOLS_PORT = 8766  # the worlds' tool server (world tasks): workers' sandboxes reach it like the gateway
RAY_PORTS = (6379, 8265, 10001)
#: the seccomp profile (shipped in assay.deploy.seccomp, installed on the nodes, also rendered as a
#: ConfigMap) that allows the user-namespace syscalls bubblewrap needs
BWRAP_SECCOMP = PROFILE_PATH
SECCOMP_CONFIGMAP = "assay-seccomp"
LABEL = "app.kubernetes.io/part-of"
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


@dataclass(frozen=True)
class RenderOptions:
    """Everything ``assay k8s render`` can be told; each field is one command-line option."""

    suite: str  # path of the suite (or sealed package) inside the image
    agents: tuple[str, ...]
    repeat: int = 1
    model: str | None = None
    expect_digest: str | None = None
    image: str = "assay-runtime:latest"
    namespace: str = "assay-eval"
    name: str = "assay-campaign"
    sandbox_workers: int = 2
    verifier_workers: int = 1  # 0: each attempt verified on its own node (its own sandbox and uid)
    trials_per_worker: int = 4
    worker_cpu: str = "2"
    worker_memory: str = "8Gi"
    head_cpu: str = "2"
    head_memory: str = "4Gi"
    runs_storage: str = "20Gi"
    deadline_s: int = 6 * 3600
    upstream_cidr: str = "0.0.0.0/0"
    upstream_port: int = 443
    ray_version: str = "2.60.0"
    key_secret: str = "assay-upstream-key"
    runtime_class: str | None = None  # RuntimeClass of the sandbox and verifier workers (gVisor, Kata): a second wall
    extra_args: tuple[str, ...] = field(default_factory=tuple)
    #: the suite's task images, pulled by digest into every pod's image store (:mod:`assay.deploy.k8s_images`)
    task_images: tuple[TaskImage, ...] = ()

    def check(self) -> None:
        problems = []
        if not self.agents:
            problems.append("--agent: give at least one agent")
        for name, value in (("--repeat", self.repeat), ("--sandbox-workers", self.sandbox_workers),
                            ("--trials-per-worker", self.trials_per_worker),
                            ("--deadline-s", self.deadline_s)):
            if value < 1:
                problems.append(f"{name}: must be at least 1, not {value}")
        if self.verifier_workers < 0:
            problems.append(f"--verifier-workers: must be 0 (verify on the attempt's node) or more, "
                            f"not {self.verifier_workers}")
        problems.extend(p for p in (
            k8s_check.dns1123_label("--namespace", self.namespace), k8s_check.dns1123_label("--name", self.name),
            k8s_check.dns1123_label("--key-secret", self.key_secret),
            k8s_check.port("--upstream-port", self.upstream_port), k8s_check.cidr("--upstream-cidr", self.upstream_cidr),
            k8s_check.quantity("--worker-cpu", self.worker_cpu, memory=False),
            k8s_check.quantity("--head-cpu", self.head_cpu, memory=False),
            k8s_check.quantity("--worker-memory", self.worker_memory, memory=True),
            k8s_check.quantity("--head-memory", self.head_memory, memory=True),
            k8s_check.quantity("--runs-storage", self.runs_storage, memory=True)) if p)
        rc = self.runtime_class
        if rc is not None and not _DNS_SUBDOMAIN.fullmatch(rc):
            problems.append(f"--runtime-class {rc!r}: a RuntimeClass name is a DNS subdomain (lowercase letters, "
                            "digits, '-' and '.'), e.g. gvisor")
        if problems:
            raise UsageError("; ".join(problems) + " (fix: see `assay k8s render --help`)")
        k8s_images.check(self.task_images)


def _meta(o: RenderOptions, name: str, **labels: str) -> dict[str, Any]:
    return {"name": name, "namespace": o.namespace, "labels": {LABEL: "assay", "assay/campaign": o.name, **labels}}


def _container_security(read_only: bool, seccomp: dict[str, str]) -> dict[str, Any]:
    return {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": read_only,
            "capabilities": {"drop": ["ALL"]}, "seccompProfile": seccomp}


def _resources(cpu: str, memory: str) -> dict[str, Any]:
    return {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}


def entrypoint(o: RenderOptions) -> str:
    """The campaign command the RayJob runs on the head."""
    args = ["assay", "run", o.suite, "--agent", ",".join(o.agents), "--repeat", str(o.repeat), "--executor", "ray",
            "--address", "auto", "--jobs", str(o.sandbox_workers * o.trials_per_worker), "--out", f"/runs/{o.name}"]
    if o.model:
        args += ["--model", o.model]
    if o.expect_digest:
        args += ["--expect-digest", o.expect_digest]
    return " ".join(shlex.quote(a) for a in (*args, *o.extra_args))


def _head(o: RenderOptions) -> dict[str, Any]:
    env = [{"name": "ASSAY_UPSTREAM_API_KEY", "valueFrom": {"secretKeyRef": {"name": o.key_secret, "key": "api-key",
                                                                            "optional": True}}},
           {"name": "ASSAY_GATEWAY_HOST", "value": "0.0.0.0"},  # the head's services, reached from worker pods
           {"name": "ASSAY_GATEWAY_PORT", "value": str(GATEWAY_PORT)},
           {"name": "ASSAY_TOOLS_PORT", "value": str(TOOLS_PORT)}]
    return {
        "rayStartParams": {"num-cpus": "0", "dashboard-host": "0.0.0.0"},
        "template": {
            "metadata": {"labels": {"assay/role": "head"}},
            "spec": {
                "serviceAccountName": "assay-runner", "automountServiceAccountToken": False,
                "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "fsGroup": 1000,
                                    "seccompProfile": {"type": "RuntimeDefault"}},
                "containers": [{
                    "name": "ray-head", "image": o.image, "env": env,
                    "ports": [{"containerPort": p, "name": n} for p, n in
                              zip((*RAY_PORTS, GATEWAY_PORT, TOOLS_PORT), ("gcs", "dashboard", "client", "gateway",
                                                                           "tools"))],
                    "resources": _resources(o.head_cpu, o.head_memory),
                    "securityContext": _container_security(True, {"type": "RuntimeDefault"}),
                    "volumeMounts": [{"name": "runs", "mountPath": "/runs"}, {"name": "tmp", "mountPath": "/tmp"}],
                }],
                "volumes": [{"name": "runs", "persistentVolumeClaim": {"claimName": "assay-runs"}},
                            {"name": "tmp", "emptyDir": {}}],
            },
        },
    }


def _worker(o: RenderOptions, group: str, replicas: int, account: str, resource: str) -> dict[str, Any]:
    seccomp = {"type": "Localhost", "localhostProfile": BWRAP_SECCOMP}
    return {
        "groupName": group, "replicas": replicas, "minReplicas": replicas, "maxReplicas": replicas,
        "rayStartParams": {"resources": '"{\\"%s\\": %d}"' % (resource, o.trials_per_worker)},
        "template": {
            "metadata": {"labels": {"assay/role": group}},
            "spec": {
                "serviceAccountName": account, "automountServiceAccountToken": False,
                **({"runtimeClassName": o.runtime_class} if o.runtime_class else {}),
                # bubblewrap makes its own user namespaces inside: the pod itself runs unprivileged
                "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "fsGroup": 1000, "seccompProfile": seccomp},
                "containers": [{
                    "name": f"ray-{group}", "image": o.image,
                    "resources": _resources(o.worker_cpu, o.worker_memory),
                    "securityContext": _container_security(True, seccomp),
                    "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}, {"name": "tmp", "mountPath": "/tmp"}],
                    "env": [{"name": "TMPDIR", "value": "/scratch"}],
                }],
                "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "20Gi"}}, {"name": "tmp", "emptyDir": {}}],
            },
        },
    }


def _network_policies(o: RenderOptions) -> list[dict[str, Any]]:
    head = {"matchLabels": {"assay/role": "head"}}
    sandbox = {"matchLabels": {"assay/role": "sandbox"}}
    verifier = {"matchLabels": {"assay/role": "verifier"}}
    ports = [{"protocol": "TCP", "port": p} for p in (*RAY_PORTS, GATEWAY_PORT, TOOLS_PORT)]
    dns = {"to": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
           "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}
    # Ray moves an attempt's final state from its sandbox node to a verifier node directly
    peers = [{"podSelector": sandbox}, *([{"podSelector": verifier}] if o.verifier_workers else [])]
    policies = [
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": _meta(o, "assay-default-deny"),
         "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}},
        # sandbox workers (agents) reach the head only (Ray, the gateway, the tool server), and the verifiers
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": _meta(o, "assay-workers-to-head"),
         "spec": {"podSelector": sandbox, "policyTypes": ["Ingress", "Egress"],
                  "ingress": [{"from": [{"podSelector": head}, *peers]}],
                  "egress": [{"to": [{"podSelector": head}]}, {"to": peers}, dns]}},
        # the head reaches its workers, DNS and the upstream model API only
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": _meta(o, "assay-head"),
         "spec": {"podSelector": head, "policyTypes": ["Ingress", "Egress"],
                  "ingress": [{"from": peers, "ports": ports}],
                  "egress": [{"to": peers}, dns,
                             {"to": [{"ipBlock": {"cidr": o.upstream_cidr}}],
                              "ports": [{"protocol": "TCP", "port": o.upstream_port}]}]}},
    ]
    if o.verifier_workers:  # verifiers reach the head (a judge) and the sandbox nodes (Ray), nothing else
        policies.append(
            {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": _meta(o, "assay-verifiers"),
             "spec": {"podSelector": verifier, "policyTypes": ["Ingress", "Egress"],
                      "ingress": [{"from": [{"podSelector": head}, *peers]}],
                      "egress": [{"to": [{"podSelector": head}]}, {"to": peers}, dns]}})
    return policies


def render(o: RenderOptions) -> list[dict[str, Any]]:
    """Every object of the campaign, in apply order."""
    o.check()
    accounts = [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(o, name),
                 "automountServiceAccountToken": False}
                for name in ("assay-runner", "assay-sandbox", *(("assay-verifier",) if o.verifier_workers else ()))]
    secret = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "immutable": True,
              "metadata": {**_meta(o, o.key_secret), "annotations": {
                  "assay/lifetime": "one campaign: create it just before applying, delete it with the RayJob",
                  "assay/expires-after-seconds": str(o.deadline_s)}},
              "stringData": {"api-key": "REPLACE-WITH-A-KEY-FOR-THIS-CAMPAIGN-ONLY"}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": _meta(o, "assay-runs"),
           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": o.runs_storage}}}}
    job = {
        "apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": _meta(o, o.name),
        "spec": {
            "entrypoint": entrypoint(o), "submissionMode": "K8sJobMode", "shutdownAfterJobFinishes": True,
            "ttlSecondsAfterFinished": 3600, "activeDeadlineSeconds": o.deadline_s, "backoffLimit": 0,
            "rayClusterSpec": {
                "rayVersion": o.ray_version, "enableInTreeAutoscaling": False,
                "headGroupSpec": _head(o),
                "workerGroupSpecs": [
                    _worker(o, "sandbox", o.sandbox_workers, "assay-sandbox", SANDBOX_RESOURCE),
                    *([_worker(o, "verifier", o.verifier_workers, "assay-verifier", VERIFIER_RESOURCE)]
                      if o.verifier_workers else []),
                ],
            },
        },
    }
    seccomp = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {**_meta(o, SECCOMP_CONFIGMAP), "annotations": {
        "assay/install": "on every node running sandbox or verifier workers, as "
                         f"/var/lib/kubelet/seccomp/{PROFILE_PATH} (`assay k8s seccomp-profile` prints it)"}},
               "data": {PROFILE_PATH.rsplit("/", 1)[-1]: profile_json()}}
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": o.namespace, "labels": {
        LABEL: "assay", "pod-security.kubernetes.io/enforce": "baseline"}}}
    images = []
    if o.task_images:  # the head (its run checks every image first) and every worker fetch them
        images = [k8s_images.configmap(o.task_images, _meta(o, k8s_images.CONFIGMAP))]
        job["metadata"] = {**job["metadata"], "annotations": {"assay/task-images": k8s_images.describe(o.task_images)}}
        cluster = job["spec"]["rayClusterSpec"]
        cluster["headGroupSpec"]["template"] = k8s_images.with_images(cluster["headGroupSpec"]["template"], o.task_images)
        for group in cluster["workerGroupSpecs"]:
            group["template"] = k8s_images.with_images(group["template"], o.task_images)
    return [namespace, *accounts, seccomp, secret, pvc, *images, *_network_policies(o), job]
