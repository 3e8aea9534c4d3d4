package config

import (
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// lineMsg is one of the decoder's "line N: MESSAGE" lines.
var lineMsg = regexp.MustCompile(`(?m)^(\s*)line (\d+): (.*)$`)

// typeMsg is the decoder's message for a value of the wrong kind:
// "cannot unmarshal !!str `three` into int".
var typeMsg = regexp.MustCompile("^cannot unmarshal (!!\\w+)(?: `([^`]*)`)? into (\\S+)$")

// quoted is the first quoted value of a message ("invalid duration "5
// min" ...").
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// keyedValue is a value node of the configuration and its key path
// (episode.max_turns, tools[1].command).
type keyedValue struct {
	path string
	node *yaml.Node
}

// nameKeys rewrites each "line N: MESSAGE" of a decode error of data so
// that it names the key whose value it is about ("line 4:
// episode.max_turns: want an integer (got `three`)"), and says what a
// value of the wrong kind should be in the configuration's terms rather
// than Go's ("into int", "into config.Episode"). A line whose key cannot
// be told (two values of the kind on one line) keeps its message.
func nameKeys(msg string, data []byte) string {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil {
		return msg
	}
	byLine := map[int][]keyedValue{}
	collectValues(&doc, "", byLine)
	return lineMsg.ReplaceAllStringFunc(msg, func(m string) string {
		sub := lineMsg.FindStringSubmatch(m)
		text := sub[3]
		if strings.HasPrefix(text, "unknown key ") {
			return m
		}
		line, _ := strconv.Atoi(sub[2])
		if key := keyOf(byLine[line], text); key != "" {
			text = key + ": " + wantKind(text)
		} else {
			text = wantKind(text)
		}
		return sub[1] + "line " + sub[2] + ": " + text
	})
}

// collectValues adds every value below n (mapping values and sequence
// elements, n's own too when path is set) to byLine, in document order.
func collectValues(n *yaml.Node, path string, byLine map[int][]keyedValue) {
	if path != "" {
		byLine[n.Line] = append(byLine[n.Line], keyedValue{path, n})
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			collectValues(c, path, byLine)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if path != "" {
				k = path + "." + k
			}
			collectValues(n.Content[i+1], k, byLine)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			collectValues(c, path+"["+strconv.Itoa(i)+"]", byLine)
		}
	}
}

// keyOf picks, among the values on the message's line, the one the
// message is about: of the kind it names (!!seq, !!str) and with the value
// it quotes, the deepest. It returns "" when none or several unrelated
// ones fit.
func keyOf(values []keyedValue, text string) string {
	tag, val, hasVal, goType := "", "", false, ""
	if t := typeMsg.FindStringSubmatch(text); t != nil {
		tag, val, hasVal, goType = t[1], t[2], t[2] != "", t[3]
	} else if q := quoted.FindString(text); q != "" {
		if s, err := strconv.Unquote(q); err == nil {
			val, hasVal = s, true
		}
	}
	var fit []keyedValue
	for _, v := range values {
		if tag != "" && v.node.ShortTag() != tag {
			continue
		}
		if hasVal && (v.node.Kind != yaml.ScalarNode || !sameValue(v.node.Value, val)) {
			continue
		}
		if t := typeAt(v.path); goType != "" && t != nil && strings.TrimLeft(t.String(), "*") != strings.TrimLeft(goType, "*") {
			continue
		}
		fit = append(fit, v)
	}
	if len(fit) == 0 {
		return ""
	}
	// Values nested in one another share the line (a flow list and its
	// elements); the deepest is the one decoded last. Unrelated ones (two
	// keys of a flow mapping with the same value) cannot be told apart.
	last := fit[len(fit)-1]
	for _, v := range fit[:len(fit)-1] {
		if !strings.HasPrefix(last.path, v.path) {
			return ""
		}
	}
	return last.path
}

// sameValue says whether a value the decoder quoted (cut to "./my-ha..."
// when long) is s.
func sameValue(s, quoted string) bool {
	if cut, ok := strings.CutSuffix(quoted, "..."); ok && len(s) > len(cut) {
		return strings.HasPrefix(s, cut)
	}
	return s == quoted
}

// wantKind rewrites "cannot unmarshal !!str `three` into int" as "want
// an integer (got `three`)"; other messages are kept.
func wantKind(text string) string {
	t := typeMsg.FindStringSubmatch(text)
	if t == nil {
		return text
	}
	got := map[string]string{"!!seq": "a list", "!!map": "a mapping", "!!null": "nothing"}[t[1]]
	if t[2] != "" {
		got = "`" + t[2] + "`"
	}
	if got == "" {
		got = t[1]
	}
	return "want " + goKind(t[3]) + " (got " + got + ")"
}

// goKind names a Go type the decoder names in the configuration's terms.
func goKind(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case strings.HasPrefix(goType, "map["), strings.Contains(goType, "."):
		return "a mapping"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		return "an integer"
	case strings.HasPrefix(goType, "float"):
		return "a number"
	case goType == "bool":
		return "true or false"
	case goType == "string":
		return "a string"
	}
	return goType
}

// typeAt is the Go type the value at a key path (tools[1].command) is
// decoded into, or nil when the path is not the configuration's.
func typeAt(path string) reflect.Type {
	t := reflect.TypeFor[Config]()
	for _, seg := range strings.Split(path, ".") {
		name, rest, _ := strings.Cut(seg, "[")
		if t = fieldType(t, name); t == nil {
			return nil
		}
		for ; rest != ""; _, rest, _ = strings.Cut(rest, "[") {
			for t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
				return nil
			}
			t = t.Elem()
		}
	}
	return t
}

// fieldType is the type of t's field (or map value) named key in YAML.
func fieldType(t reflect.Type, key string) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Map {
		return t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if strings.Contains(opts, "inline") {
			if ft := fieldType(f.Type, key); ft != nil {
				return ft
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		if f.IsExported() && name == key {
			return f.Type
		}
	}
	return nil
}
