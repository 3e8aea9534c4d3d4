package kubernetes

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/deploy/kubernetes/internal/crdschema"
	"github.com/harnessd/harnessd/internal/testbin"
)

// update rewrites testdata/schemas.json from the agent-sandbox CRDs.
var update = flag.Bool("update", false, "rewrite testdata/schemas.json from the agent-sandbox CRDs (HARNESSD_AGENT_SANDBOX_CRDS, or agentSandboxModule's)")

// schemasFile holds, per "apiVersion/kind", the CRD's schema pruned to the
// fields the manifests and testdata/claim-ready.json use (TestSchemasAreTheCRDs).
const schemasFile = "testdata/schemas.json"

// crdFiles are the CRDs, by the kind they define.
var crdFiles = map[string]string{
	"SandboxTemplate": "extensions.agents.x-k8s.io_sandboxtemplates.yaml",
	"SandboxWarmPool": "extensions.agents.x-k8s.io_sandboxwarmpools.yaml",
	"SandboxClaim":    "extensions.agents.x-k8s.io_sandboxclaims.yaml",
	"Sandbox":         "agents.x-k8s.io_sandboxes.yaml",
}

// objects are every YAML document of the directory's manifests and the
// ready claim, decoded.
func objects(t *testing.T) []map[string]any {
	t.Helper()
	files, _ := filepath.Glob("*.yaml")
	var out []map[string]any
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		for {
			var doc map[string]any
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if doc != nil {
				out = append(out, doc)
			}
		}
	}
	raw, err := os.ReadFile("testdata/claim-ready.json")
	if err != nil {
		t.Fatal(err)
	}
	var claim map[string]any
	if err := json.Unmarshal(raw, &claim); err != nil {
		t.Fatal(err)
	}
	return append(out, claim)
}

func agentSandbox(o map[string]any) bool {
	v, _ := o["apiVersion"].(string)
	return strings.HasPrefix(v, "agents.x-k8s.io/") || strings.HasPrefix(v, "extensions.agents.x-k8s.io/")
}

func key(o map[string]any) string { return o["apiVersion"].(string) + "/" + o["kind"].(string) }

func loadSchemas(t *testing.T) map[string]crdschema.Schema {
	t.Helper()
	raw, err := os.ReadFile(schemasFile)
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]crdschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestManifestsMatchTheCRDs: every agent-sandbox object here validates
// against its CRD's schema (pruned: testdata/schemas.json), every kind and
// apiVersion is one the CRDs serve, and the Secret and ConfigMap are what
// the template mounts.
func TestManifestsMatchTheCRDs(t *testing.T) {
	schemas := loadSchemas(t)
	kinds := map[string]bool{}
	for _, o := range objects(t) {
		if !agentSandbox(o) {
			continue
		}
		kinds[o["kind"].(string)] = true
		s, ok := schemas[key(o)]
		if !ok {
			t.Errorf("%s: no schema: not a kind and version the agent-sandbox CRDs serve (or run with -update)", key(o))
			continue
		}
		if err := crdschema.Validate(s, o); err != nil {
			t.Errorf("%s %v:\n%v", key(o), o["metadata"], err)
		}
	}
	for _, k := range []string{"SandboxTemplate", "SandboxWarmPool", "SandboxClaim"} {
		if !kinds[k] {
			t.Errorf("no %s among the manifests", k)
		}
	}
}

// TestValidateCatchesMistakes is the control: the same checks reject an
// unknown field, a wrong enum value, a wrong type and a missing required
// field in copies of the real manifests.
func TestValidateCatchesMistakes(t *testing.T) {
	schemas := loadSchemas(t)
	byKind := map[string]map[string]any{}
	for _, o := range objects(t) {
		if agentSandbox(o) {
			byKind[o["kind"].(string)] = o
		}
	}
	for _, tc := range []struct {
		name, kind, want string
		edit             func(o map[string]any)
	}{
		{"unknown container field", "SandboxTemplate", "no such field", func(o map[string]any) {
			c := dig(o, "spec", "podTemplate", "spec", "containers").([]any)[0].(map[string]any)
			c["imagePullSecret"] = "typo"
		}},
		{"wrong enum", "SandboxTemplate", "is not one of", func(o map[string]any) {
			dig(o, "spec").(map[string]any)["networkPolicyManagement"] = "Sometimes"
		}},
		{"wrong type", "SandboxWarmPool", "is not of type integer", func(o map[string]any) {
			dig(o, "spec").(map[string]any)["replicas"] = "sixteen"
		}},
		{"missing required", "SandboxClaim", "spec.warmPoolRef: required field missing", func(o map[string]any) {
			delete(dig(o, "spec").(map[string]any), "warmPoolRef")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := deepCopy(t, byKind[tc.kind])
			tc.edit(o)
			err := crdschema.Validate(schemas[key(o)], o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestConfigMapEnvironmentParses: the environment the ConfigMap carries is
// a valid harnessd configuration.
func TestConfigMapEnvironmentParses(t *testing.T) {
	for _, o := range objects(t) {
		if o["kind"] != "ConfigMap" {
			continue
		}
		env := dig(o, "data", "env.yaml").(string)
		cfg, err := config.ParseConfig([]byte(env), t.TempDir())
		if err != nil {
			t.Fatalf("configmap env.yaml: %v", err)
		}
		if cfg.Isolation != config.IsolationProcess {
			t.Fatalf("isolation %q: the pod is the sandbox here (README.md)", cfg.Isolation)
		}
		return
	}
	t.Fatal("no ConfigMap among the manifests")
}

// agentSandboxModule is the agent-sandbox release whose CRDs (k8s/crds in
// its Go module) the manifests are checked against when
// HARNESSD_AGENT_SANDBOX_CRDS names no other copy: the Go module proxy
// serves it to every machine that can build harnessd, CI's included.
const agentSandboxModule = "sigs.k8s.io/agent-sandbox@v1.0.1"

// crdDir is the directory of the agent-sandbox CRDs: HARNESSD_AGENT_SANDBOX_CRDS,
// else agentSandboxModule's k8s/crds, downloaded into the module cache.
// Without either the test cannot run (testbin.Missing: a failure with
// CI=true).
func crdDir(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("HARNESSD_AGENT_SANDBOX_CRDS"); dir != "" {
		return dir
	}
	cmd := exec.Command("go", "mod", "download", "-json", agentSandboxModule)
	cmd.Dir = t.TempDir() // outside harnessd's module: its go.mod and go.sum stay as they are
	out, err := cmd.Output()
	var m struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &m); err != nil || jerr != nil || m.Error != "" || m.Dir == "" {
		testbin.Missing(t, "the agent-sandbox CRDs: go mod download %s: %v %s (or set HARNESSD_AGENT_SANDBOX_CRDS to a copy of its k8s/crds)", agentSandboxModule, err, m.Error)
	}
	return filepath.Join(m.Dir, "k8s", "crds")
}

// TestSchemasAreTheCRDs: testdata/schemas.json is the CRDs' schemas pruned
// to what the objects use (and every field they use exists in the CRDs).
// The CRDs ship with agent-sandbox, not with harnessd (crdDir); the other
// tests check against the pruned copy.
func TestSchemasAreTheCRDs(t *testing.T) {
	dir := crdDir(t)
	byKey := map[string][]any{}
	for _, o := range objects(t) {
		if agentSandbox(o) {
			byKey[key(o)] = append(byKey[key(o)], o)
		}
	}
	want := map[string]crdschema.Schema{}
	for k, objs := range byKey {
		parts := strings.Split(k, "/") // group, version, kind
		full := crdVersionSchema(t, filepath.Join(dir, crdFiles[parts[2]]), parts[1])
		pruned, err := crdschema.Prune(full, objs...)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		want[k] = pruned
	}
	if *update {
		b, _ := json.MarshalIndent(want, "", " ")
		if err := os.WriteFile(schemasFile, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got := loadSchemas(t)
	wantJSON, _ := json.Marshal(want)
	var wantBack map[string]crdschema.Schema
	json.Unmarshal(wantJSON, &wantBack)
	if !reflect.DeepEqual(got, wantBack) {
		t.Fatalf("%s is stale: go test ./deploy/kubernetes -run TestSchemasAreTheCRDs -update", schemasFile)
	}
}

// crdVersionSchema is the openAPIV3Schema of version of the CRD in file.
func crdVersionSchema(t *testing.T, file, version string) crdschema.Schema {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string `yaml:"name"`
				Served bool   `yaml:"served"`
				Schema struct {
					OpenAPIV3Schema map[string]any `yaml:"openAPIV3Schema"`
				} `yaml:"schema"`
			} `yaml:"versions"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == version && v.Served {
			return v.Schema.OpenAPIV3Schema
		}
	}
	t.Fatalf("%s serves no version %s", file, version)
	return nil
}

func dig(o map[string]any, path ...string) any {
	var cur any = o
	for _, p := range path {
		cur = cur.(map[string]any)[p]
	}
	return cur
}

func deepCopy(t *testing.T, o map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	json.Unmarshal(b, &c)
	return c
}
