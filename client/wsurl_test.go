package client

import "testing"

// A base URL names the server; one that already ends with the route (the
// ws://host/ws a user copies) is that route, not a prefix: chat dialled
// /ws/ws and got a 404.
func TestWSURL(t *testing.T) {
	for base, want := range map[string]string{
		"http://h:1":        "ws://h:1/ws",
		"h:1":               "ws://h:1/ws",
		"https://h/prefix/": "wss://h/prefix/ws",
		"ws://h:1/ws":       "ws://h:1/ws",
		"ws://h:1/ws/":      "ws://h:1/ws",
	} {
		if got, err := wsURL(base, "/ws"); err != nil || got != want {
			t.Errorf("wsURL(%q) = %q, %v; want %q", base, got, err, want)
		}
	}
}
