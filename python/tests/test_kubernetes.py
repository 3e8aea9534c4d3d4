"""KubernetesProvider against a local HTTP server that plays the
Kubernetes API server and agent-sandbox's controller for SandboxClaims:
create (the body checked against the claim CRD's schema), watch to Ready
(the "controller" sets the status of deploy/kubernetes/testdata/
claim-ready.json after the create), delete. Untested against a real
cluster.

The schema is deploy/kubernetes/testdata/schemas.json: agent-sandbox's CRDs
(commit 2fd412d55ecae90861a101a5424a75473de97c36, v1beta1) pruned to the
fields deploy/kubernetes uses, which `go test ./deploy/kubernetes` keeps
equal to the CRDs. The "pods" are real daemons on 127.0.0.2 and 127.0.0.3
(loopback addresses), the same port on each, as pods of one template are.
"""

from __future__ import annotations

import asyncio
import copy
import json
import secrets
import socket
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import harnessd
from conftest import REPO
from harnessd.kubernetes import ClaimError, KubernetesProvider

KDIR = REPO / "deploy" / "kubernetes"
SCHEMAS = json.loads((KDIR / "testdata" / "schemas.json").read_text())
CLAIM_READY = json.loads((KDIR / "testdata" / "claim-ready.json").read_text())
TOKEN = "sa-token"
TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


def validate(v: Any, s: dict[str, Any], path: str, errs: list[str]) -> None:
    """The openAPIV3Schema rules the pruned schema carries: type, enum,
    required, and no field the schema does not have."""
    t = s.get("type")
    if t == "integer" and (not isinstance(v, int) or isinstance(v, bool)):
        errs.append(f"{path}: {v!r} is not an integer")
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


class FakeAPI:
    """The API server's claim routes, with a controller making each claim
    of a known warm pool Ready on the next free pod IP."""

    def __init__(self, pod_ips: list[str], pools: set[str]) -> None:
        self.free = list(pod_ips)
        self.pools = pools
        self.claims: dict[str, dict[str, Any]] = {}
        self.events: list[tuple[int, str, dict[str, Any]]] = []
        self.rv = 100
        self.cond = threading.Condition()
        self.polls = 0
        self.watches = 0
        self.deleted: list[str] = []
        self.bad: list[str] = []

    def emit(self, typ: str, obj: dict[str, Any]) -> None:
        with self.cond:
            self.rv += 1
            obj["metadata"]["resourceVersion"] = str(self.rv)
            self.events.append((self.rv, typ, json.loads(json.dumps(obj))))
            self.cond.notify_all()

    def controller(self, name: str) -> None:
        with self.cond:
            obj = self.claims.get(name)
            if obj is None:
                return
            pool = obj["spec"]["warmPoolRef"]["name"]
            if pool in self.pools and self.free:
                # claim-ready.json's status, for this claim's sandbox.
                obj["status"] = copy.deepcopy(CLAIM_READY["status"])
                obj["status"]["sandbox"] = {"name": name, "podIPs": [self.free.pop(0)]}
            else:
                obj["status"] = {"conditions": [{"type": "Ready", "status": "False", "reason": "NoWarmSandbox",
                                                 "message": "the warm pool has no sandbox", "lastTransitionTime": "2026-12-01T00:00:00Z"}]}
        self.emit("MODIFIED", obj)

    def check(self, body: dict[str, Any]) -> list[str]:
        errs: list[str] = []
        key = f"{body.get('apiVersion')}/{body.get('kind')}"
        if key not in SCHEMAS:
            return [f"no schema for {key}"]
        validate(body, SCHEMAS[key], "SandboxClaim", errs)
        return errs


def serve(api: FakeAPI) -> ThreadingHTTPServer:
    base = "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/rl/sandboxclaims"

    class H(BaseHTTPRequestHandler):
        def log_message(self, *a: Any) -> None:
            pass

        def reply(self, code: int, obj: Any) -> None:
            b = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(b)))
            self.end_headers()
            self.wfile.write(b)

        def authorized(self) -> bool:
            if self.headers.get("Authorization") != "Bearer " + TOKEN:
                self.reply(401, {"kind": "Status", "code": 401})
                return False
            return True

        def do_POST(self) -> None:
            if not self.authorized():
                return
            if self.path != base:
                return self.reply(404, {})
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            errs = api.check(body)
            if errs:
                api.bad.extend(errs)
                return self.reply(422, {"kind": "Status", "message": "; ".join(errs)})
            md = body["metadata"]
            name = md.get("name") or md["generateName"] + secrets.token_hex(3)[:5]
            md["name"] = name
            with api.cond:
                api.claims[name] = body
            api.emit("ADDED", body)
            self.reply(201, api.events[-1][2])
            threading.Thread(target=api.controller, args=(name,)).start()

        def do_GET(self) -> None:
            if not self.authorized():
                return
            u = urllib.parse.urlsplit(self.path)
            q = dict(urllib.parse.parse_qsl(u.query))
            if u.path != base or q.get("watch") != "1":
                api.polls += 1
                return self.reply(404, {})
            api.watches += 1
            name = q["fieldSelector"].removeprefix("metadata.name=")
            since = int(q.get("resourceVersion") or 0)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            sent = since
            deadline = float(q.get("timeoutSeconds", "5"))
            while True:
                with api.cond:
                    todo = [e for e in api.events if e[0] > sent and e[2]["metadata"]["name"] == name]
                    if not todo and not api.cond.wait(deadline):
                        return
                for rv, typ, obj in todo:
                    self.wfile.write(json.dumps({"type": typ, "object": obj}).encode() + b"\n")
                    self.wfile.flush()
                    sent = rv
                    if typ == "DELETED":
                        return

        def do_DELETE(self) -> None:
            if not self.authorized():
                return
            name = self.path.rsplit("/", 1)[1]
            with api.cond:
                obj = api.claims.pop(name, None)
            if obj is None:
                return self.reply(404, {"kind": "Status", "code": 404})
            api.deleted.append(name)
            api.emit("DELETED", obj)
            self.reply(200, {"kind": "Status", "status": "Success"})

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def free_port(host: str) -> int:
    s = socket.socket()
    s.bind((host, 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_claims_to_ready_daemons_and_back(daemons) -> None:
    port = free_port("127.0.0.2")
    pods = ["127.0.0.2", "127.0.0.3"]
    ds = [daemons.start(max_sessions=2, listen=f"{ip}:{port}") for ip in pods]
    api = FakeAPI(pods, {"harnessd"})
    srv = serve(api)
    try:
        prov = KubernetesProvider(2, warm_pool="harnessd", namespace="rl", port=port, address="pod_ip",
                                    server=f"http://127.0.0.1:{srv.server_port}", token=TOKEN, ready_timeout=30)

        async def go() -> harnessd.GroupResult:
            async with harnessd.Pool(prov) as pool:
                g = await harnessd.rollout_group(pool, None, 4, lambda o, t: None if t.turns else "llm hi")
            await prov.close()
            return g

        g = asyncio.run(go())
    finally:
        srv.shutdown()
    assert not api.bad
    assert not g.failed and {e.trajectory.daemon for e in g.episodes} == {d.url for d in ds}
    # Two claims, each waited for on a watch (no polling), both deleted.
    assert api.watches == 2 and api.polls == 0
    assert sorted(api.deleted) == sorted({e[2]["metadata"]["name"] for e in api.events})
    assert not api.claims and not prov.claims
    assert all(e.export and e.export["chains"] for e in g.episodes)


def test_a_claim_that_is_never_ready() -> None:
    api = FakeAPI([], set())
    srv = serve(api)
    try:
        prov = KubernetesProvider(1, warm_pool="empty", namespace="rl", server=f"http://127.0.0.1:{srv.server_port}",
                                    token=TOKEN, ready_timeout=2)
        with pytest.raises(ClaimError, match="NoWarmSandbox"):
            asyncio.run(prov.daemons())
    finally:
        srv.shutdown()
    # The failed claim was deleted, not left behind.
    assert not api.claims and len(api.deleted) == 1


def test_claim_objects() -> None:
    beta = KubernetesProvider(1, warm_pool="harnessd", namespace="rl", server="http://127.0.0.1:1")
    c = beta.claim_object()
    errs: list[str] = []
    validate(c, SCHEMAS["extensions.agents.x-k8s.io/v1beta1/SandboxClaim"], "SandboxClaim", errs)
    assert not errs, errs
    # What deploy/kubernetes/sandboxclaim.yaml says the provider creates.
    assert c["spec"] == {"warmPoolRef": {"name": "harnessd"}, "lifecycle": {"shutdownPolicy": "Delete"}}
    assert c["metadata"]["generateName"] == "harnessd-" and c["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "harnessd-python"
    # The Ready claim of the manifests' tests: through the Sandbox's
    # Service by default, or the pod's IP.
    assert beta.base_url(CLAIM_READY) == "http://harnessd-x7k2p.rl.svc:8000"
    ip = KubernetesProvider(1, warm_pool="harnessd", namespace="rl", server="http://127.0.0.1:1", address="pod_ip")
    assert ip.base_url(CLAIM_READY) == "http://10.8.3.17:8000"
    # The validator refuses what the schema does (a positive control).
    for bad in ({**c, "spec": {"warmPoolRef": {}}}, {**c, "spec": {**c["spec"], "lifecycle": {"shutdownPolicy": "Sometimes"}}},
                {**c, "spec": {**c["spec"], "warmpool": "x"}}):
        errs = []
        validate(bad, SCHEMAS["extensions.agents.x-k8s.io/v1beta1/SandboxClaim"], "SandboxClaim", errs)
        assert errs
    # v1alpha1's claim names its template (spec.sandboxTemplateRef.name, required there).
    alpha = KubernetesProvider(1, template="tpl", namespace="ns", server="http://127.0.0.1:1")
    assert alpha.claim_object()["spec"]["sandboxTemplateRef"] == {"name": "tpl"}
    assert alpha.claim_object()["apiVersion"] == "extensions.agents.x-k8s.io/v1alpha1"
    with pytest.raises(ValueError):
        KubernetesProvider(1, warm_pool="a", template="b", server="http://x")
