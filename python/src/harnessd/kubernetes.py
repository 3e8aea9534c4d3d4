"""A :class:`~harnessd.pool.Provider` of daemons claimed on Kubernetes
through kubernetes-sigs/agent-sandbox, for the manifests of deploy/kubernetes
(a SandboxWarmPool ``harnessd`` of harnessd pods).

:class:`KubernetesProvider` creates ``SandboxClaim`` objects
(``extensions.agents.x-k8s.io``; ``v1beta1`` claims from a
``SandboxWarmPool`` by ``spec.warmPoolRef.name``, ``v1alpha1`` claims from a
``SandboxTemplate`` by ``spec.sandboxTemplateRef.name``), waits on a watch —
never by polling — until each claim is ``Ready`` and names its sandbox
(``status.sandbox``), and hands out its daemon's base URL: through the
Sandbox's Service (``http://NAME.NAMESPACE.svc:PORT``, the template's
``spec.service: true``) or its pod's IP (``status.sandbox.podIPs``);
:meth:`~KubernetesProvider.close` deletes the claims (``lifecycle.
shutdownPolicy: Delete`` then deletes their sandboxes). It speaks the
Kubernetes API over plain HTTPS with the pod's service account (token and CA
under ``/var/run/secrets/kubernetes.io/serviceaccount``), or a server, token
and CA given; the official ``kubernetes`` Python client is not used.

The field names follow the CRDs of agent-sandbox at commit
2fd412d55ecae90861a101a5424a75473de97c36. It is tested against a local HTTP
server playing the API server and agent-sandbox's controller
(python/tests/test_kubernetes.py), not against a real cluster.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from typing import Any

from .errors import InfrastructureError

__all__ = ["KubernetesProvider", "ClaimError", "GROUP", "SERVICE_ACCOUNT_DIR"]

#: The API group of SandboxClaim.
GROUP = "extensions.agents.x-k8s.io"
#: Where a pod's service-account credentials are mounted.
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


class ClaimError(InfrastructureError):
    """A claim could not be created, became not Ready, or did not become
    Ready in time."""


def claim_ready(obj: dict[str, Any]) -> tuple[bool, str]:
    """(ready, why not) of a claim object: its Ready condition."""
    for c in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == "Ready":
            if c.get("status") == "True":
                return True, ""
            return False, f"{c.get('reason', '')}: {c.get('message', '')}"
    return False, "no Ready condition yet"


class KubernetesProvider:
    """``count`` daemons claimed from agent-sandbox.

    ``warm_pool`` (``v1beta1``; deploy/kubernetes's is ``harnessd``) or
    ``template`` (``v1alpha1``) names what the claims come from, in
    ``namespace``. ``address`` is ``service`` (the Sandbox's Service name,
    ``NAME.NAMESPACE.svc``) or ``pod_ip``; ``port`` is harnessd's port
    (the template's ``--listen``), ``scheme`` ``http`` or ``https``. ``server`` (default: the in-cluster API server from
    ``KUBERNETES_SERVICE_HOST``/``_PORT``), ``token`` and ``ca_file``
    (default: the service account's) reach the API. ``ready_timeout``
    bounds the wait for each claim. ``labels`` are put on the claims.
    """

    def __init__(
        self,
        count: int,
        *,
        warm_pool: str | None = None,
        template: str | None = None,
        namespace: str | None = None,
        port: int = 8000,
        scheme: str = "http",
        address: str = "service",
        server: str | None = None,
        token: str | None = None,
        ca_file: str | None = None,
        ready_timeout: float = 60.0,
        name_prefix: str = "harnessd-",
        labels: dict[str, str] | None = None,
    ) -> None:
        if (warm_pool is None) == (template is None):
            raise ValueError("give exactly one of warm_pool (v1beta1) and template (v1alpha1)")
        if count < 1:
            raise ValueError("count must be at least 1")
        self.count = count
        self.warm_pool, self.template = warm_pool, template
        self.version = "v1beta1" if warm_pool is not None else "v1alpha1"
        self.namespace = namespace or self._read_sa("namespace") or "default"
        if address not in ("service", "pod_ip"):
            raise ValueError("address is 'service' or 'pod_ip'")
        self.port, self.scheme, self.address = port, scheme, address
        if server is None:
            host, p = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT", "443")
            if not host:
                raise ValueError("no server given and not in a cluster (KUBERNETES_SERVICE_HOST unset)")
            server = f"https://{host}:{p}"
        self.server = server.rstrip("/")
        self.token = token if token is not None else self._read_sa("token")
        ca = ca_file if ca_file is not None else (os.path.join(SERVICE_ACCOUNT_DIR, "ca.crt") if self.server.startswith("https") else None)
        self._ssl = ssl.create_default_context(cafile=ca) if self.server.startswith("https") and ca and os.path.exists(ca) else None
        self.ready_timeout = ready_timeout
        self.name_prefix = name_prefix
        self.labels = {"app.kubernetes.io/managed-by": "harnessd-python", **(labels or {})}
        #: claim name -> base URL, for the claims that are Ready.
        self.claims: dict[str, str | None] = {}

    @staticmethod
    def _read_sa(name: str) -> str | None:
        try:
            with open(os.path.join(SERVICE_ACCOUNT_DIR, name)) as f:
                return f.read().strip()
        except OSError:
            return None

    def _path(self, name: str = "") -> str:
        p = f"/apis/{GROUP}/{self.version}/namespaces/{urllib.parse.quote(self.namespace)}/sandboxclaims"
        return p + ("/" + urllib.parse.quote(name) if name else "")

    def _call(self, method: str, path: str, body: Any = None, timeout: float = 30.0) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=self._ssl) as resp:
                return json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as e:
            raise ClaimError(f"{method} {path}: HTTP {e.code}: {e.read()[:500].decode('utf-8', 'replace')}") from None
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise ClaimError(f"{method} {path}: {e}") from e

    def claim_object(self) -> dict[str, Any]:
        """The SandboxClaim this provider creates (the API server names it
        from ``generateName``), as deploy/kubernetes/sandboxclaim.yaml shows."""
        ref: dict[str, Any] = {"warmPoolRef": {"name": self.warm_pool}} if self.version == "v1beta1" else {"sandboxTemplateRef": {"name": self.template}}
        return {
            "apiVersion": f"{GROUP}/{self.version}",
            "kind": "SandboxClaim",
            "metadata": {"generateName": self.name_prefix, "namespace": self.namespace, "labels": dict(self.labels)},
            "spec": {**ref, "lifecycle": {"shutdownPolicy": "Delete"}},
        }

    def base_url(self, obj: dict[str, Any]) -> str | None:
        """The daemon's base URL of a Ready claim object (None when its
        status does not name the sandbox yet)."""
        sbx = (obj.get("status") or {}).get("sandbox") or {}
        if self.address == "service":
            name = sbx.get("name")
            return f"{self.scheme}://{name}.{self.namespace}.svc:{self.port}" if isinstance(name, str) and name else None
        ips = sbx.get("podIPs") or []
        return f"{self.scheme}://{ips[0]}:{self.port}" if ips and isinstance(ips[0], str) else None

    def _create(self) -> tuple[str, str]:
        obj = self._call("POST", self._path(), self.claim_object())
        md = obj.get("metadata") or {}
        name = md.get("name")
        if not isinstance(name, str) or not name:
            raise ClaimError(f"the API server's answer to the claim names no claim: {str(obj)[:300]}")
        return name, str(md.get("resourceVersion", ""))

    def _wait_ready(self, name: str, rv: str) -> str:
        """Watch claim ``name`` from resourceVersion ``rv`` until it is
        Ready; its base URL."""
        q = {"watch": "1", "fieldSelector": "metadata.name=" + name, "timeoutSeconds": str(max(1, int(self.ready_timeout)))}
        if rv:
            q["resourceVersion"] = rv
        req = urllib.request.Request(self.server + self._path() + "?" + urllib.parse.urlencode(q))
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        why = "the watch ended"
        deadline = time.monotonic() + self.ready_timeout
        try:
            # The server ends the watch at timeoutSeconds; the socket's own
            # timeout is a backstop past it.
            with urllib.request.urlopen(req, timeout=self.ready_timeout + 10, context=self._ssl) as resp:
                for line in resp:
                    if not line.strip():
                        continue
                    ev = json.loads(line)
                    obj = ev.get("object") or {}
                    if ev.get("type") == "DELETED":
                        raise ClaimError(f"claim {name} was deleted before it was Ready")
                    if ev.get("type") == "ERROR":
                        raise ClaimError(f"watch of claim {name}: {obj.get('message', obj)}")
                    ok, why = claim_ready(obj)
                    url = self.base_url(obj) if ok else None
                    if url:
                        return url
                    if ok:
                        why = f"Ready without status.sandbox ({self.address})"
                    if time.monotonic() > deadline:
                        break
        except (TimeoutError, socket.timeout):
            pass
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise ClaimError(f"watch of claim {name}: {e}") from e
        raise ClaimError(f"claim {name} not Ready within {self.ready_timeout}s: {why}")

    def _claim_one(self) -> tuple[str, str]:
        name, rv = self._create()
        self.claims[name] = None
        url = self._wait_ready(name, rv)
        self.claims[name] = url
        return name, url

    async def daemons(self) -> Sequence[str]:
        """Claims up to ``count`` sandboxes (those not yet claimed, in
        parallel), waits until each is Ready, and returns the base URLs of
        all that are. A claim that fails is deleted; when none is Ready the
        first failure is raised."""
        missing = self.count - sum(1 for u in self.claims.values() if u)
        errs: list[BaseException] = []
        if missing > 0:
            res = await asyncio.gather(*(asyncio.to_thread(self._claim_one) for _ in range(missing)), return_exceptions=True)
            errs = [r for r in res if isinstance(r, BaseException)]
            for name in [n for n, u in self.claims.items() if u is None]:
                await asyncio.to_thread(self._delete, name)
        urls = [u for u in self.claims.values() if u]
        if not urls and errs:
            raise errs[0]
        return urls

    def _delete(self, name: str) -> None:
        try:
            self._call("DELETE", self._path(name))
        except ClaimError:
            pass  # already gone, or the API is down: the claim's lifecycle policy ends it
        self.claims.pop(name, None)

    async def release(self, url: str) -> None:
        """Delete the claim whose daemon is ``url`` (a daemon found broken);
        the next :meth:`daemons` claims a replacement."""
        for name, u in list(self.claims.items()):
            if u == url:
                await asyncio.to_thread(self._delete, name)

    async def close(self) -> None:
        """Delete every claim this provider made."""
        await asyncio.gather(*(asyncio.to_thread(self._delete, n) for n in list(self.claims)))

