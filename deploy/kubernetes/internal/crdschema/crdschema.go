// Package crdschema checks Kubernetes objects against the OpenAPI v3
// schemas of CustomResourceDefinitions, and prunes a CRD's schema down to
// the fields a set of objects uses, so a repository can carry the few
// kilobytes it checks instead of the CRDs themselves. It implements the
// structural-schema subset CRDs use (type, properties, items,
// additionalProperties, required, enum, x-kubernetes-int-or-string,
// x-kubernetes-preserve-unknown-fields, anyOf of types); it owns no
// manifests and talks to no cluster.
package crdschema

import (
	"errors"
	"fmt"
	"slices"
	"sort"
)

// Schema is one node of an OpenAPI v3 schema as decoded from YAML or JSON.
type Schema = map[string]any

// kept are the keywords a pruned node keeps besides its children.
var kept = []string{"type", "enum", "required", "format", "minimum", "maximum", "pattern", "default",
	"x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields", "anyOf"}

// Prune returns the part of s that objs use: each node on a path some
// object has, with its keywords (required lists whole), and no other
// children. It fails, naming the path, when an object has a field s does
// not define: what it returns then would not be s's.
func Prune(s Schema, objs ...any) (Schema, error) {
	out := Schema{}
	var errs []error
	for _, o := range objs {
		errs = append(errs, prune(s, out, o, "")...)
	}
	return out, errors.Join(errs...)
}

func prune(s, out Schema, v any, path string) []error {
	for _, k := range kept {
		if x, ok := s[k]; ok {
			out[k] = x
		}
	}
	if opaque(s, path) {
		return nil
	}
	switch v := v.(type) {
	case map[string]any:
		var errs []error
		for _, k := range sortedKeys(v) {
			child, where := childSchema(s, k)
			if child == nil {
				errs = append(errs, fmt.Errorf("%s: no such field in the schema", join(path, k)))
				continue
			}
			dst := subNode(out, where, k)
			errs = append(errs, prune(child, dst, v[k], join(path, k))...)
		}
		return errs
	case []any:
		items, _ := s["items"].(Schema)
		if items == nil {
			return []error{fmt.Errorf("%s: a list where the schema has no items", path)}
		}
		dst, _ := out["items"].(Schema)
		if dst == nil {
			dst = Schema{}
			out["items"] = dst
		}
		var errs []error
		for i, e := range v {
			errs = append(errs, prune(items, dst, e, fmt.Sprintf("%s[%d]", path, i))...)
		}
		return errs
	}
	return nil
}

// opaque says the schema does not describe the node's fields: it keeps
// unknown fields, or it is the object's own metadata, which a CRD declares
// as a bare object and the API server checks as ObjectMeta.
func opaque(s Schema, path string) bool {
	if truthy(s["x-kubernetes-preserve-unknown-fields"]) && s["properties"] == nil {
		return true
	}
	return path == "metadata" && s["properties"] == nil && s["additionalProperties"] == nil
}

// childSchema is the schema of field k of an object node s, and whether
// it came from properties or additionalProperties.
func childSchema(s Schema, k string) (Schema, string) {
	if props, ok := s["properties"].(Schema); ok {
		if c, ok := props[k].(Schema); ok {
			return c, "properties"
		}
	}
	if ap, ok := s["additionalProperties"].(Schema); ok {
		return ap, "additionalProperties"
	}
	return nil, ""
}

// subNode is the pruned node for field k under out's properties (or its
// additionalProperties, shared by every key).
func subNode(out Schema, where, k string) Schema {
	if where == "additionalProperties" {
		n, _ := out["additionalProperties"].(Schema)
		if n == nil {
			n = Schema{}
			out["additionalProperties"] = n
		}
		return n
	}
	props, _ := out["properties"].(Schema)
	if props == nil {
		props = Schema{}
		out["properties"] = props
	}
	n, _ := props[k].(Schema)
	if n == nil {
		n = Schema{}
		props[k] = n
	}
	return n
}

// Validate checks v against s: every field defined, types and enums
// respected, required fields present. It reports every problem, each with
// its path.
func Validate(s Schema, v any) error {
	return errors.Join(validate(s, v, "")...)
}

func validate(s Schema, v any, path string) []error {
	if v == nil {
		return nil // null: an unset optional field
	}
	if err := checkType(s, v, path); err != nil {
		return []error{err}
	}
	if enum, ok := s["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
		return []error{fmt.Errorf("%s: %v is not one of %v", path, v, enum)}
	}
	switch v := v.(type) {
	case map[string]any:
		if opaque(s, path) {
			return nil
		}
		var errs []error
		for _, r := range asStrings(s["required"]) {
			if _, ok := v[r]; !ok {
				errs = append(errs, fmt.Errorf("%s: required field missing", join(path, r)))
			}
		}
		for _, k := range sortedKeys(v) {
			child, _ := childSchema(s, k)
			if child == nil {
				errs = append(errs, fmt.Errorf("%s: no such field in the schema", join(path, k)))
				continue
			}
			errs = append(errs, validate(child, v[k], join(path, k))...)
		}
		return errs
	case []any:
		items, _ := s["items"].(Schema)
		var errs []error
		for i, e := range v {
			if items == nil {
				return []error{fmt.Errorf("%s: a list where the schema has no items", path)}
			}
			errs = append(errs, validate(items, e, fmt.Sprintf("%s[%d]", path, i))...)
		}
		return errs
	}
	return nil
}

// checkType checks v's JSON type against s's type (or its
// int-or-string, or an anyOf of types).
func checkType(s Schema, v any, path string) error {
	if truthy(s["x-kubernetes-int-or-string"]) {
		if isInt(v) || isString(v) {
			return nil
		}
		return fmt.Errorf("%s: %v is neither an integer nor a string", path, v)
	}
	if alts, ok := s["anyOf"].([]any); ok && s["type"] == nil {
		for _, a := range alts {
			if as, ok := a.(Schema); ok && checkType(as, v, path) == nil {
				return nil
			}
		}
		return fmt.Errorf("%s: %v matches none of %v", path, v, alts)
	}
	t, _ := s["type"].(string)
	ok := true
	switch t {
	case "":
	case "object":
		_, ok = v.(map[string]any)
	case "array":
		_, ok = v.([]any)
	case "string":
		ok = isString(v)
	case "integer":
		ok = isInt(v)
	case "number":
		ok = isInt(v) || isFloat(v)
	case "boolean":
		_, ok = v.(bool)
	}
	if !ok {
		return fmt.Errorf("%s: %v (%T) is not of type %s", path, v, v, t)
	}
	return nil
}

func isString(v any) bool { _, ok := v.(string); return ok }

func isInt(v any) bool {
	switch n := v.(type) {
	case int, int64, uint64:
		return true
	case float64:
		return n == float64(int64(n))
	}
	return false
}

func isFloat(v any) bool { _, ok := v.(float64); return ok }

func truthy(v any) bool { b, _ := v.(bool); return b }

func asStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, e := range l {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}
