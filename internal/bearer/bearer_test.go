package bearer

import "testing"

func TestHeaderAndToken(t *testing.T) {
	if got := Header("abc"); got != "Bearer abc" {
		t.Fatalf("Header: %q", got)
	}
	for _, c := range []struct {
		in, tok string
		ok      bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer  abc ", "abc", true},
		{"BEARER abc", "abc", true},
		{"Basic abc", "", false},
		{"Bearer", "", false},
		{"", "", false},
		{"Bearerabc", "", false},
	} {
		tok, ok := Token(c.in)
		if tok != c.tok || ok != c.ok {
			t.Errorf("Token(%q) = %q, %v; want %q, %v", c.in, tok, ok, c.tok, c.ok)
		}
	}
	if tok, ok := Token(Header("round-trip")); !ok || tok != "round-trip" {
		t.Errorf("round trip: %q %v", tok, ok)
	}
}
