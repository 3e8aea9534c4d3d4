#!/usr/bin/env python3
"""Writes agent-sandbox-schemas.json: the parts of agent-sandbox's CRD
schemas (spec.versions[].schema.openAPIV3Schema) that deploy/kubernetes/
harnessd.yaml and SandboxClaimProvider's claims use, so the tests can check
them without the CRDs (which users of this repository do not have).

    /usr/bin/python3 python/tests/testdata/prune_crds.py CRD_DIR

CRD_DIR holds agent-sandbox's k8s/crds/ (commit 2fd412d55ecae90861a101a5424a75473de97c36
for the file committed here). It fails, naming the field, when a manifest
uses a field the CRD does not have: the pruned schema only keeps fields
that exist.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(REPO / "python" / "src"))

from harnessd.kubernetes import SandboxClaimProvider  # noqa: E402

KEEP = ("type", "enum", "required", "format", "x-kubernetes-int-or-string", "anyOf", "minimum", "maximum")
CRDS = {
    "SandboxTemplate": "extensions.agents.x-k8s.io_sandboxtemplates.yaml",
    "SandboxWarmPool": "extensions.agents.x-k8s.io_sandboxwarmpools.yaml",
    "SandboxClaim": "extensions.agents.x-k8s.io_sandboxclaims.yaml",
}


def prune(value: Any, schema: dict[str, Any], path: str) -> dict[str, Any]:
    out = {k: schema[k] for k in KEEP if k in schema}
    if isinstance(value, dict):
        props = schema.get("properties")
        addl = schema.get("additionalProperties")
        if props is None and isinstance(addl, dict):
            out["additionalProperties"] = {k: addl[k] for k in KEEP if k in addl}
            return out
        if props is None:
            return out  # an object the CRD does not detail (metadata)
        keep: dict[str, Any] = {}
        for k, v in value.items():
            if k not in props:
                raise SystemExit(f"{path}.{k}: not a field of the CRD")
            keep[k] = prune(v, props[k], f"{path}.{k}")
        # Required fields are checked even when the manifest omits them.
        for k in schema.get("required", []):
            keep.setdefault(k, {kk: props[k][kk] for kk in KEEP if kk in props[k]})
        out["properties"] = keep
    elif isinstance(value, list) and "items" in schema:
        merged: dict[str, Any] = {}
        for i, x in enumerate(value):
            merge(merged, prune(x, schema["items"], f"{path}[{i}]"))
        out["items"] = merged or {k: schema["items"][k] for k in KEEP if k in schema["items"]}
    return out


def merge(dst: dict[str, Any], src: dict[str, Any]) -> None:
    """Deep-merge pruned schema src into dst (the fields either uses)."""
    for k, v in src.items():
        if k in ("properties",) and k in dst:
            for pk, pv in v.items():
                if pk in dst[k]:
                    merge(dst[k][pk], pv)
                else:
                    dst[k][pk] = pv
        elif k == "items" and k in dst:
            merge(dst[k], v)
        else:
            dst[k] = v


def main() -> None:
    crd_dir = Path(sys.argv[1])
    docs = [d for d in yaml.safe_load_all((REPO / "deploy" / "kubernetes" / "harnessd.yaml").read_text()) if d]
    beta = SandboxClaimProvider(1, warm_pool="harnessd-warm", namespace="rl", server="http://127.0.0.1:1")
    alpha = SandboxClaimProvider(1, template="harnessd", namespace="rl", server="http://127.0.0.1:1")
    objects = [d for d in docs if d["kind"] in CRDS] + [beta.claim_object("c"), alpha.claim_object("c")]
    out: dict[str, Any] = {"source": "kubernetes-sigs/agent-sandbox k8s/crds @ 2fd412d55ecae90861a101a5424a75473de97c36", "schemas": {}}
    for obj in objects:
        crd = yaml.safe_load((crd_dir / CRDS[obj["kind"]]).read_text())
        group = crd["spec"]["group"]
        version = obj["apiVersion"].split("/")[1]
        assert obj["apiVersion"].split("/")[0] == group, obj["apiVersion"]
        v = next(v for v in crd["spec"]["versions"] if v["name"] == version)
        key = f"{group}/{version}/{obj['kind']}"
        p = prune(obj, v["schema"]["openAPIV3Schema"], obj["kind"])
        if key in out["schemas"]:  # two objects of one kind: the fields of both
            merge(out["schemas"][key], p)
        else:
            out["schemas"][key] = p
    (HERE / "agent-sandbox-schemas.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
