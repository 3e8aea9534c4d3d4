package server

import (
	"strings"
	"testing"
)

// A route of the other mode is a 404 that says which mode serves it: /web
// in production answered {"detail":"Not Found"} alone, and a client
// dialling /harness on a simulation server could not tell why. A path
// that neither mode serves is the plain 404 (the control).
func TestNotFoundNamesTheModeThatServesTheRoute(t *testing.T) {
	for _, c := range []struct {
		mode       Mode
		path, hint string
	}{
		{Production, "/web/api/sessions", "served in simulation mode only; this server runs in production mode"},
		{Production, "/reset", "served in simulation mode only"},
		{Simulation, "/harness", "served in production mode only; this server runs in simulation mode"},
		{Simulation, "/nowhere", ""},
		{Production, "/nowhere", ""},
	} {
		ts := start(t, Options{Mode: c.mode})
		status, body := getJSON(t, ts.url+c.path)
		hint, _ := body["hint"].(string)
		if status != 404 || body["detail"] != "Not Found" || (c.hint == "") != (hint == "") || !strings.Contains(hint, c.hint) {
			t.Errorf("%s %s: %d %v, want 404 with hint %q", c.mode, c.path, status, body, c.hint)
		}
	}
}
