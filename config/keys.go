package config

import (
	"reflect"
	"regexp"
	"strings"
	"sync"
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
		if k := closestKey(sub[1], keysOf()[sub[2]]); k != "" {
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

// closestKey is the key of keys nearest to k by edit distance, when it is
// near enough to be a misspelling (at most a third of k's letters, and at
// least one, apart); "" when none is.
func closestKey(k string, keys []string) string {
	best, bestD := "", max(1, len(k)/3)+1
	for _, c := range keys {
		if d := editDistance(strings.ToLower(k), c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the optimal-string-alignment distance between a and b:
// insertions, deletions, substitutions and swaps of two neighbouring
// letters (the usual typo) each count one.
func editDistance(a, b string) int {
	rows := [3][]int{make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)}
	for j := range rows[1] {
		rows[1][j] = j
	}
	for i := 1; i <= len(a); i++ {
		pp, prev, cur := rows[0], rows[1], rows[2]
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], pp[j-2]+1)
			}
		}
		rows = [3][]int{prev, cur, pp}
	}
	return rows[1][len(b)]
}
