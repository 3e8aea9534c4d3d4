// Package kubernetes holds harnessd's manifests for running on Kubernetes
// through kubernetes-sigs/agent-sandbox (a SandboxTemplate, a
// SandboxWarmPool, an example SandboxClaim, the Secret and ConfigMap they
// use) and the tests that check every field they use against the
// agent-sandbox CRDs' schemas. It has no code of its own; README.md says
// how to use the manifests.
package kubernetes
