"""`assay k8s render` output validated offline: core objects against the Kubernetes JSON schemas
(kubernetes-validate, strict), the RayJob against KubeRay's own CRD schema — for every option."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from assay.deploy.k8s import BWRAP_SECCOMP, RenderOptions, render
from tests.conftest import assay_env, cli_timeout

SCHEMAS = Path(__file__).parent / "schemas"
K8S_VERSION = "1.30.0"


def _crd_schema(kind: str) -> dict[str, Any]:
    doc = json.loads(gzip.open(SCHEMAS / f"ray.io_{kind}.schema.json.gz", "rt").read())
    return doc["openAPIV3Schema"]


def _strip_openapi(schema: Any) -> Any:
    """OpenAPI v3 -> JSON Schema: int-or-string and nullable become what they mean."""
    if isinstance(schema, dict):
        out = {k: _strip_openapi(v) for k, v in schema.items() if not k.startswith("x-kubernetes-")}
        if schema.get("x-kubernetes-int-or-string"):
            out.pop("type", None)
            out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        if out.pop("nullable", False) and "type" in out:
            out["type"] = [out["type"], "null"]
        return out
    if isinstance(schema, list):
        return [_strip_openapi(x) for x in schema]
    return schema


RAYJOB = _strip_openapi(_crd_schema("rayjobs"))


def validate_all(objs: list[dict[str, Any]]) -> None:
    for obj in objs:
        if obj["apiVersion"].startswith("ray.io/"):
            jsonschema.Draft7Validator(RAYJOB).validate(obj)
        else:
            kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


OPTIONS = [
    RenderOptions(suite="/suites/starter", agents=("reference",)),
    RenderOptions(suite="/suites/pkg.tar", agents=("pi", "hermes", "dsh"), repeat=5, model="upstream:https://api.example/v1#m",
                  expect_digest="a" * 64, image="registry.local/assay:1", namespace="evals", name="nightly",
                  sandbox_workers=6, trials_per_worker=8, worker_cpu="4", worker_memory="16Gi",
                  head_cpu="1", head_memory="2Gi", runs_storage="100Gi", deadline_s=3600, upstream_cidr="10.0.0.0/8",
                  upstream_port=8443, ray_version="2.40.0"),
]


@pytest.mark.parametrize("opts", OPTIONS, ids=["defaults", "every-option"])
def test_rendered_objects_validate_against_kubernetes_and_kuberay_schemas(opts: RenderOptions) -> None:
    objs = render(opts)
    validate_all(objs)
    kinds = [o["kind"] for o in objs]
    assert kinds.count("ServiceAccount") == 3 and "RayJob" in kinds and "Secret" in kinds
    assert kinds.count("NetworkPolicy") == 4


def test_options_reach_the_objects() -> None:
    o = OPTIONS[1]
    objs = {(x["kind"], x["metadata"]["name"]): x for x in render(o)}
    job = objs[("RayJob", "nightly")]["spec"]
    assert job["activeDeadlineSeconds"] == 3600
    assert "--agent pi,hermes,dsh" in job["entrypoint"] and "--repeat 5" in job["entrypoint"]
    assert f"--expect-digest {'a' * 64}" in job["entrypoint"] and "--jobs 48" in job["entrypoint"]
    groups = {g["groupName"]: g for g in job["rayClusterSpec"]["workerGroupSpecs"]}
    # agents and verifiers in groups of their own: the verifier pods advertise the resource the
    # Ray executor ships final states to
    assert list(groups) == ["sandbox", "verifier"] and groups["sandbox"]["replicas"] == 6
    assert '"assay_sandbox\\": 8' in groups["sandbox"]["rayStartParams"]["resources"]
    assert '"assay_verifier\\": 8' in groups["verifier"]["rayStartParams"]["resources"]
    accounts = sorted(x["metadata"]["name"] for x in objs.values() if x["kind"] == "ServiceAccount")
    assert accounts == ["assay-runner", "assay-sandbox", "assay-verifier"]
    # the head, the sandbox workers and the verifiers run under different identities, none with an API token
    assert groups["sandbox"]["template"]["spec"]["serviceAccountName"] == "assay-sandbox"
    assert groups["verifier"]["template"]["spec"]["serviceAccountName"] == "assay-verifier"
    assert groups["verifier"]["template"]["spec"]["automountServiceAccountToken"] is False
    verifiers = objs[("NetworkPolicy", "assay-verifiers")]["spec"]
    assert all("ipBlock" not in peer for rule in verifiers["egress"] for peer in rule.get("to", []))
    head = job["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    assert head["serviceAccountName"] == "assay-runner"
    # the head's services listen for the worker pods, on the ports the head's NetworkPolicy opens
    env = {e["name"]: e.get("value") for e in head["containers"][0]["env"]}
    assert (env["ASSAY_GATEWAY_HOST"], env["ASSAY_GATEWAY_PORT"], env["ASSAY_TOOLS_PORT"]) == ("0.0.0.0", "8765", "8766")
    opened = {p["port"] for r in objs[("NetworkPolicy", "assay-head")]["spec"]["ingress"] for p in r["ports"]}
    assert {8765, 8766} <= opened
    for spec in (head, groups["sandbox"]["template"]["spec"]):
        assert spec["automountServiceAccountToken"] is False
        c = spec["containers"][0]
        assert c["securityContext"]["readOnlyRootFilesystem"] is True and c["securityContext"]["allowPrivilegeEscalation"] is False
        assert c["resources"]["limits"] == c["resources"]["requests"]
    assert groups["sandbox"]["template"]["spec"]["securityContext"]["seccompProfile"]["localhostProfile"] == BWRAP_SECCOMP
    assert groups["sandbox"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "4", "memory": "16Gi"}
    # sandboxes reach the head only; the head reaches the upstream only on the given CIDR and port
    workers = objs[("NetworkPolicy", "assay-workers-to-head")]["spec"]
    assert all("ipBlock" not in peer for rule in workers["egress"] for peer in rule.get("to", []))
    head_np = objs[("NetworkPolicy", "assay-head")]["spec"]
    upstream = [r for r in head_np["egress"] if any("ipBlock" in p for p in r.get("to", []))]
    assert upstream == [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}], "ports": [{"protocol": "TCP", "port": 8443}]}]
    secret = objs[("Secret", "assay-upstream-key")]
    assert secret["immutable"] is True and secret["metadata"]["annotations"]["assay/expires-after-seconds"] == "3600"
    assert objs[("PersistentVolumeClaim", "assay-runs")]["spec"]["resources"]["requests"]["storage"] == "100Gi"


def test_without_verifier_workers_each_attempt_is_verified_on_its_node() -> None:
    from dataclasses import replace
    objs = render(replace(OPTIONS[0], verifier_workers=0))
    validate_all(objs)
    job = next(o for o in objs if o["kind"] == "RayJob")
    assert [g["groupName"] for g in job["spec"]["rayClusterSpec"]["workerGroupSpecs"]] == ["sandbox"]
    assert sorted(o["metadata"]["name"] for o in objs if o["kind"] == "ServiceAccount") == ["assay-runner", "assay-sandbox"]
    with pytest.raises(Exception, match="--verifier-workers"):
        render(replace(OPTIONS[0], verifier_workers=-1))


def test_the_resources_rendered_are_the_ones_the_executor_schedules_on() -> None:
    from assay.deploy import k8s
    from assay.run.cluster import executor, verifiers
    assert (k8s.SANDBOX_RESOURCE, k8s.VERIFIER_RESOURCE) == (executor.SANDBOX_RESOURCE, verifiers.VERIFIER_RESOURCE)


def test_schema_check_is_not_vacuous() -> None:
    objs = render(OPTIONS[0])
    job = next(o for o in objs if o["kind"] == "RayJob")
    broken = json.loads(json.dumps(job))
    del broken["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["groupName"]
    with pytest.raises(jsonschema.ValidationError):
        validate_all([broken])
    np = json.loads(json.dumps(next(o for o in objs if o["kind"] == "NetworkPolicy")))
    np["spec"]["policyTypes"] = "Ingress"
    with pytest.raises(kubernetes_validate.ValidationError):
        validate_all([np])


def test_cli_renders_yaml_and_refuses_bad_options() -> None:
    cmd = [sys.executable, "-m", "assay.cli.main", "k8s", "render", "--suite", "/suites/starter"]
    p = subprocess.run([*cmd, "--agent", "reference,pi", "-n", "3"], capture_output=True, text=True, env=assay_env(),
                       timeout=cli_timeout())
    assert p.returncode == 0, p.stderr
    docs = list(yaml.safe_load_all(p.stdout))
    validate_all(docs)
    assert docs[-1]["kind"] == "RayJob" and "--agent reference,pi" in docs[-1]["spec"]["entrypoint"]
    bad = subprocess.run([*cmd, "--sandbox-workers", "0"], capture_output=True, text=True, env=assay_env(),
                         timeout=cli_timeout())
    assert bad.returncode == 2 and "--agent" in bad.stderr and "--sandbox-workers" in bad.stderr
    assert "Traceback" not in bad.stderr and not bad.stdout


def test_the_seccomp_profile_the_workers_name_is_shipped_and_rendered() -> None:
    from assay.deploy.seccomp import DENIED, NEEDED_BY_BWRAP, profile

    objs = render(RenderOptions(suite="/s", agents=("a",)))
    validate_all(objs)
    job = next(o for o in objs if o["kind"] == "RayJob")
    named = job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]["securityContext"]["seccompProfile"]
    cm = next(o for o in objs if o["kind"] == "ConfigMap")
    assert named == {"type": "Localhost", "localhostProfile": "profiles/assay-bwrap.json"}
    (fname, text), = cm["data"].items()
    assert named["localhostProfile"].endswith("/" + fname) and named["localhostProfile"] in cm["metadata"]["annotations"]["assay/install"]
    printed = subprocess.run([sys.executable, "-m", "assay.cli.main", "k8s", "seccomp-profile"], capture_output=True,
                             text=True, env=assay_env(), timeout=cli_timeout())
    assert printed.returncode == 0 and printed.stdout == text and json.loads(text) == profile()
    refused = {n for rule in profile()["syscalls"] if rule["action"] != "SCMP_ACT_ALLOW" for n in rule["names"]}
    assert not refused & set(NEEDED_BY_BWRAP)  # bubblewrap can build its namespaces
    assert {"kexec_load", "init_module", "bpf", "userfaultfd", "open_by_handle_at"} <= refused == set(DENIED)


def test_runtime_class_reaches_the_sandbox_and_verifier_workers_only_and_is_validated() -> None:
    objs = render(RenderOptions(suite="/s", agents=("a",), runtime_class="gvisor"))
    validate_all(objs)
    job = next(o for o in objs if o["kind"] == "RayJob")["spec"]["rayClusterSpec"]
    # both worker groups run what the agent wrote (the verifiers run its code under the hidden tests)
    assert [g["groupName"] for g in job["workerGroupSpecs"]] == ["sandbox", "verifier"]
    assert all(g["template"]["spec"]["runtimeClassName"] == "gvisor" for g in job["workerGroupSpecs"])
    assert "runtimeClassName" not in job["headGroupSpec"]["template"]["spec"]
    default = next(o for o in render(RenderOptions(suite="/s", agents=("a",))) if o["kind"] == "RayJob")
    assert "runtimeClassName" not in default["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]
    bad = subprocess.run([sys.executable, "-m", "assay.cli.main", "k8s", "render", "--suite", "/s", "-a", "x",
                          "--runtime-class", "GVisor!"], capture_output=True, text=True, env=assay_env(),
                          timeout=cli_timeout())
    assert bad.returncode == 2 and "--runtime-class" in bad.stderr and not bad.stdout
