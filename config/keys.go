package config

import (
	"reflect"
	"regexp"
	"strings"
	"sync"

	"github.com/harnessd/harnessd/internal/nearest"
)

// yamlFieldErr is the YAML decoder's message for an unknown key: "field K
// not found in type T", T the Go type decoded into.
var yamlFieldErr = regexp.MustCompile(`field (\S+) not found in type (\S+)`)

// unknownKeys rewrites the decoder's unknown-key messages as "unknown key
// K", adding the closest key of the same mapping when one is near
// ("unknown key comand (did you mean command?)"), and never the Go type.
func unknownKeys(msg string) string {
	return yamlFieldErr.ReplaceAllStringFunc(msg, func(m string) string {
		sub := yamlFieldErr.FindStringSubmatch(m)
		s := "unknown key " + sub[1]
		if k := nearest.Key(sub[1], keysOf()[sub[2]]); k != "" {
			s += " (did you mean " + k + "?)"
		}
		return s
	})
}

// keysOf maps each struct type of the configuration, by the name the
// decoder gives it, to its keys.
var keysOf = sync.OnceValue(func() map[string][]string {
	out := map[string][]string{}
	collectKeys(reflect.TypeFor[Config](), out)
	return out
})

// collectKeys adds t's keys, and those of every struct type reachable from
// it, to out.
func collectKeys(t reflect.Type, out map[string][]string) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	if _, seen := out[t.String()]; seen {
		return
	}
	out[t.String()] = nil
	var keys []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			collectKeys(f.Type, out)
			keys = append(keys, out[f.Type.String()]...)
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		keys = append(keys, name)
		collectKeys(f.Type, out)
	}
	out[t.String()] = keys
}
