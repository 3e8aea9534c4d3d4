package evaljob_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The ATIF schema the internal/atif tests validate against (written from
// Harbor's RFC 0001, ATIF v1.7).
const atifSchemaFile = "../internal/atif/testdata/atif-v1.7.schema.json"

var (
	schemaOnce sync.Once
	schema     *jsonschema.Schema
	schemaErr  error
)

// validateATIF checks doc against the ATIF schema and the step ids'
// numbering (from 1, in order) that a schema cannot say.
func validateATIF(t *testing.T, doc []byte) []string {
	t.Helper()
	schemaOnce.Do(func() {
		p, err := filepath.Abs(atifSchemaFile)
		if err != nil {
			schemaErr = err
			return
		}
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		schema, schemaErr = c.Compile(p)
	})
	if schemaErr != nil {
		t.Fatalf("compiling the ATIF schema: %v", schemaErr)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return []string{"not JSON: " + err.Error()}
	}
	var problems []string
	if err := schema.Validate(inst); err != nil {
		problems = append(problems, err.Error())
	}
	var tr struct {
		Steps []struct {
			ID int `json:"step_id"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(doc, &tr); err != nil {
		return append(problems, err.Error())
	}
	for i, s := range tr.Steps {
		if s.ID != i+1 {
			problems = append(problems, fmt.Sprintf("step %d has step_id %d", i+1, s.ID))
		}
	}
	return problems
}

// The validator's positive control: what the spec forbids is caught, so
// the trajectories' passing means something.
func TestATIFValidatorRejectsWhatTheSpecForbids(t *testing.T) {
	for name, doc := range map[string]string{
		"no agent":          `{"schema_version": "ATIF-v1.7", "steps": [{"step_id": 1, "source": "user", "message": "hi"}]}`,
		"step ids from 2":   `{"schema_version": "ATIF-v1.7", "agent": {"name": "a", "version": "1"}, "steps": [{"step_id": 2, "source": "user", "message": "hi"}]}`,
		"an unknown source": `{"schema_version": "ATIF-v1.7", "agent": {"name": "a", "version": "1"}, "steps": [{"step_id": 1, "source": "robot", "message": "hi"}]}`,
	} {
		if len(validateATIF(t, []byte(doc))) == 0 {
			t.Errorf("%s: accepted", name)
		}
	}
	ok := `{"schema_version": "ATIF-v1.7", "agent": {"name": "a", "version": "1"}, "steps": [{"step_id": 1, "source": "user", "message": "hi"}]}`
	if p := validateATIF(t, []byte(ok)); len(p) > 0 {
		t.Errorf("a valid trajectory refused: %v", p)
	}
}
