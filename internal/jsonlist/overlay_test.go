package jsonlist

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

// item is an element of the lists FuzzReadOver reads.
type item struct {
	A string `json:"a"`
	N []int  `json:"n"`
	i int
}

// itemList reads its list with Read, over the list as it stands.
type itemList []item

func (l *itemList) UnmarshalJSON(b []byte) error {
	v, err := Read(*l, b, []string{"a", "n"}, func(it *item) *int { return &it.i })
	*l = v
	return err
}

// wordList reads its list with Overlay.
type wordList []string

func (l *wordList) UnmarshalJSON(b []byte) error {
	v, err := Overlay(*l, b, func(e []byte, s *string) error { return json.Unmarshal(e, s) })
	*l = v
	return err
}

// kept is the elements of l that are not zero, each as its place and value.
func kept(l []item, place func(int, *item) int) []string {
	var out []string
	for k := range l {
		if v := l[k]; v.A != "" || v.N != nil {
			out = append(out, fmt.Sprintf("%d:%q%v", place(k, &v), v.A, v.N))
		}
	}
	return out
}

// FuzzReadOver checks Read and Overlay against json.Unmarshal into plain
// slices when a list's key comes three times (in other cases too): the
// elements that are not zero in their places, and the words, the same
// (a list shortened by the second key shows its elements again when the
// third is longer); decoded or refused alike.
func FuzzReadOver(f *testing.F) {
	for _, s := range [][3]string{
		{`[{"a":"x"},{"a":"y","n":[1]}]`, `[{}]`, `[null,null,{"n":[2]}]`},
		{`[{},{"a":"y"}]`, `[{"n":[1]}]`, `[null,{"a":"z"}]`},
		{`null`, `[]`, `[{}]`}, {`[{"a":1}]`, `[]`, `[]`}, {`{}`, `[]`, `[]`}, {`[1]`, `[{}]`, `[]`},
		{`["a","b","c"]`, `["d"]`, `[null,null,null,null]`}, {`[[],{"A":"x"}]`, `[{"a\u0000":"y"}]`, `[]`},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, x, y, z string) {
		body := []byte(`{"l":` + x + `,"L":` + y + `,"l":` + z + `}`)
		if !json.Valid(body) {
			return
		}
		var want struct{ L []item }
		var got struct{ L itemList }
		werr, gerr := json.Unmarshal(body, &want), json.Unmarshal(body, &got)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%s: error %v, was %v", body, gerr, werr)
		}
		if werr == nil {
			w := kept(want.L, func(k int, _ *item) int { return k })
			g := kept(got.L, func(_ int, v *item) int { return v.i })
			if !reflect.DeepEqual(g, w) || (want.L == nil) != (got.L == nil) {
				t.Fatalf("%s: %q, was %q", body, g, w)
			}
		}
		var wantW struct{ L []string }
		var gotW struct{ L wordList }
		werr, gerr = json.Unmarshal(body, &wantW), json.Unmarshal(body, &gotW)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%s: words error %v, was %v", body, gerr, werr)
		}
		if werr == nil && (!reflect.DeepEqual([]string(gotW.L), wantW.L) || (wantW.L == nil) != (gotW.L == nil)) {
			t.Fatalf("%s: words %q, was %q", body, gotW.L, wantW.L)
		}
	})
}
