package wire

import (
	"encoding/json"
	"reflect"
	"testing"
)

// referenceMetadata is what metadataFields replaced: the encoder over the
// whole struct, its turn events left out.
func referenceMetadata(t *testing.T, m Metadata) string {
	t.Helper()
	m.TurnEvents = nil
	w := getWriter()
	defer putWriter(w)
	if err := w.value(m); err != nil {
		t.Fatal(err)
	}
	return w.buf.String()
}

func handMetadata(t *testing.T, m *Metadata) string {
	t.Helper()
	w := getWriter()
	defer putWriter(w)
	if err := w.metadataFields(m); err != nil {
		t.Fatal(err)
	}
	return w.buf.String()
}

// fill sets v (settable) to a value that is not empty, with strings that
// need escaping and hold invalid UTF-8, so that each field's encoding is
// tried where it differs from a plain one.
func fill(v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("a \"q\" <b> & ü \xff\n")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(-42)
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		v.SetUint(42)
	case reflect.Float64, reflect.Float32:
		v.SetFloat(0.25)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte(`{"raw":"\xff"}`))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		if e.Kind() == reflect.Interface {
			e.Set(reflect.ValueOf(map[string]any{"n": 1.5, "s": "x<y>"}))
		} else {
			fill(e, depth+1)
		}
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && depth < 4 {
				fill(v.Field(i), depth+1)
			}
		}
	case reflect.Interface:
		v.Set(reflect.ValueOf("iface"))
	}
}

// TestMetadataFieldsMatchTheEncoder checks metadataFields against the
// encoder byte for byte: empty, each field of Metadata set alone (a field
// added to the struct and not to metadataFields fails here), and all set.
func TestMetadataFieldsMatchTheEncoder(t *testing.T) {
	check := func(name string, m Metadata) {
		t.Helper()
		got, want := handMetadata(t, &m), referenceMetadata(t, m)
		if got != want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("%s: invalid JSON %s", name, got)
		}
	}
	check("empty", Metadata{})
	typ := reflect.TypeFor[Metadata]()
	var all Metadata
	for i := range typ.NumField() {
		if typ.Field(i).Name == "TurnEvents" {
			continue
		}
		var m Metadata
		fill(reflect.ValueOf(&m).Elem().Field(i), 0)
		check(typ.Field(i).Name, m)
		fill(reflect.ValueOf(&all).Elem().Field(i), 0)
	}
	check("all fields", all)
	empty := ""
	check("an empty response", Metadata{Response: &empty, TurnNumber: 3})
}

// BenchmarkObservationEncode is a test agent's turn observation through
// AppendJSON (the /ws frame's encoding): metadataFields is run per turn.
func BenchmarkObservationEncode(b *testing.B) {
	resp := "x"
	obs := Observation{Metadata: Metadata{EpisodeID: "0f8c2a8e-2b7e-4c55-9e4e-7a8f1f6c9d10", TurnNumber: 17, Response: &resp,
		TurnEvents: []Event{
			{Type: EventTextOutput, Timestamp: 1795940703.6084497, Data: &TextOutput{Text: "x"}, Turn: 17, Origin: OriginHarness},
			{Type: EventTurnComplete, Timestamp: 1795940703.6085, Data: &TurnComplete{Response: "x"}, Turn: 17, Origin: OriginHarness},
		}}}
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = obs.AppendJSON(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}
