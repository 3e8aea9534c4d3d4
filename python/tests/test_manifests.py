"""deploy/kubernetes/harnessd.yaml checked against agent-sandbox's CRD
schemas for every field it uses (kind, apiVersion, the template's pod spec
and network policy, the warm pool's fields), and SandboxClaimProvider's
claims likewise; then the references between the objects (names, ports,
the token's path, the grace period against the drain).

The schemas are carried in testdata/agent-sandbox-schemas.json: the parts of
agent-sandbox's CRDs (commit 2fd412d55ecae90861a101a5424a75473de97c36) these
objects use, written by testdata/prune_crds.py from the CRDs, which refuses a
field the CRD lacks. A field added to the manifest without regenerating the
file fails here as unknown.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import CI, REPO

from harnessd.kubernetes import SandboxClaimProvider

MANIFEST = REPO / "deploy" / "kubernetes" / "harnessd.yaml"
SCHEMAS = json.loads((Path(__file__).parent / "testdata" / "agent-sandbox-schemas.json").read_text())["schemas"]

TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


def validate(v: Any, s: dict[str, Any], path: str, errs: list[str]) -> None:
    """The openAPIV3Schema rules the CRDs use on these fields: type
    (integer, int-or-string), enum, required, known properties."""
    if s.get("x-kubernetes-int-or-string") or "anyOf" in s:
        if not (isinstance(v, (int, str)) and not isinstance(v, bool)):
            errs.append(f"{path}: {v!r} is not an integer or a string")
        return
    t = s.get("type")
    if t == "integer":
        if not isinstance(v, int) or isinstance(v, bool):
            errs.append(f"{path}: {v!r} is not an integer")
    elif t == "number":
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            errs.append(f"{path}: {v!r} is not a number")
    elif t in TYPES and not isinstance(v, TYPES[t]):
        errs.append(f"{path}: {type(v).__name__} is not {t}")
        return
    if "enum" in s and v not in s["enum"]:
        errs.append(f"{path}: {v!r} not one of {s['enum']}")
    if isinstance(v, dict):
        for k in s.get("required", []):
            if k not in v:
                errs.append(f"{path}: required field {k} missing")
        props, addl = s.get("properties"), s.get("additionalProperties")
        for k, x in v.items():
            if props is not None and k in props:
                validate(x, props[k], f"{path}.{k}", errs)
            elif isinstance(addl, dict):
                validate(x, addl, f"{path}.{k}", errs)
            elif props is not None:
                errs.append(f"{path}.{k}: not a field of the CRD")
    elif isinstance(v, list) and "items" in s:
        for i, x in enumerate(v):
            validate(x, s["items"], f"{path}[{i}]", errs)


def docs() -> list[dict[str, Any]]:
    try:
        import yaml
    except ImportError:
        if CI:
            pytest.fail("PyYAML is missing (python3-yaml; make python-deps installs it)")
        pytest.skip("PyYAML is missing (python3-yaml)")
    return [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]


def schema_of(obj: dict[str, Any]) -> dict[str, Any]:
    key = f"{obj['apiVersion']}/{obj['kind']}"
    assert key in SCHEMAS, f"no carried schema for {key}: apiVersion or kind not agent-sandbox's"
    return SCHEMAS[key]


def test_manifest_fields_are_the_crds() -> None:
    objs = [d for d in docs() if d["apiVersion"].startswith("extensions.agents.x-k8s.io/")]
    assert sorted(o["kind"] for o in objs) == ["SandboxTemplate", "SandboxWarmPool"]
    for o in objs:
        errs: list[str] = []
        validate(o, schema_of(o), o["kind"], errs)
        assert not errs, errs


def test_claims_are_the_crds() -> None:
    for prov in (SandboxClaimProvider(1, warm_pool="harnessd-warm", namespace="rl", server="http://127.0.0.1:1"),
                 SandboxClaimProvider(1, template="harnessd", namespace="rl", server="http://127.0.0.1:1")):
        c = prov.claim_object("harnessd-abc")
        errs: list[str] = []
        validate(c, schema_of(c), "SandboxClaim", errs)
        assert not errs, errs


def test_the_validator_refuses() -> None:
    # Positive control: what the CRDs refuse is refused.
    tpl = next(d for d in docs() if d["kind"] == "SandboxTemplate")
    s = schema_of(tpl)
    for bad in (
        {**tpl, "spec": {**tpl["spec"], "podTemplat": {}}},
        {**tpl, "spec": {k: v for k, v in tpl["spec"].items() if k != "podTemplate"}},
        {**tpl, "spec": {**tpl["spec"], "networkPolicyManagement": "Sometimes"}},
    ):
        errs: list[str] = []
        validate(bad, s, "t", errs)
        assert errs
    pod = json.loads(json.dumps(tpl))
    pod["spec"]["podTemplate"]["spec"]["terminationGracePeriodSeconds"] = "40"
    errs = []
    validate(pod, s, "t", errs)
    assert errs


def test_references_hold() -> None:
    ds = docs()
    by = {(d["kind"], d["metadata"]["name"]): d for d in ds}
    ns = {d["metadata"]["namespace"] for d in ds}
    assert ns == {"rl"}
    wp = next(d for d in ds if d["kind"] == "SandboxWarmPool")
    tpl = by[("SandboxTemplate", wp["spec"]["sandboxTemplateRef"]["name"])]
    pod = tpl["spec"]["podTemplate"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    (c,) = pod["containers"]
    args = dict(a.removeprefix("--").split("=", 1) for a in c["args"])
    # The token file is the Secret's key, mounted read-only.
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    vols = {v["name"]: v for v in pod["volumes"]}
    tok = vols["token"]["secret"]
    assert ("Secret", tok["secretName"]) in by
    assert args["api-token-file"] == mounts["token"]["mountPath"] + "/" + tok["items"][0]["path"]
    assert tok["items"][0]["key"] in by[("Secret", tok["secretName"])]["stringData"]
    cm = by[("ConfigMap", vols["config"]["configMap"]["name"])]
    assert args["config"] == mounts["config"]["mountPath"] + "/env.yaml" and "env.yaml" in cm["data"]
    import yaml

    env = yaml.safe_load(cm["data"]["env.yaml"])
    assert env["harness"]["model"]["upstream"] == "engine"
    # Probes and the network policy's port are harnessd's port (the
    # image's --listen :8000); the grace period outlasts the drain.
    assert [p["containerPort"] for p in c["ports"]] == [8000]
    assert c["livenessProbe"]["httpGet"] == {"path": "/health", "port": 8000}
    assert c["readinessProbe"]["httpGet"] == {"path": "/ready", "port": 8000}
    assert tpl["spec"]["networkPolicy"]["ingress"][0]["ports"] == [{"port": 8000, "protocol": "TCP"}]
    assert pod["terminationGracePeriodSeconds"] >= int(args["drain-timeout"].removesuffix("s")) + 10
    assert args["isolation"] == "process" and args["max-sessions"] == "1"
    assert "/tmp" in {m["mountPath"] for m in c["volumeMounts"]} and c["securityContext"]["readOnlyRootFilesystem"]
