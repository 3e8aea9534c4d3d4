package gateway

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/doorcap"
	"github.com/harnessd/harnessd/internal/doorcap/doortest"
	"github.com/harnessd/harnessd/testharness/fakellm"
)

// TestDoorBounds: the gateway holds at most Door.MaxConns keep-alive
// connections of the agent's (keyed model listings), refuses more, closes
// idle ones after the idle timeout, and serves again once they are gone.
func TestDoorBounds(t *testing.T) {
	llm := engine(t, fakellm.Options{})
	gw := startGateway(t, llm.URL(), Options{Door: doorcap.Bounds{MaxConns: 4, IdleTimeout: 300 * time.Millisecond}})
	req := "GET /v1/models HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + gw.Key() + "\r\n\r\n"
	doortest.CheckBounds(t, strings.TrimPrefix(gw.base, "http://"), 4, req, http.StatusOK)
	if s := gw.DoorStats(); s.RefusedCap != 8 || s.RefusedReserve != 0 {
		t.Errorf("door stats %+v, want 8 refused at the cap", s)
	}
}

// TestDoorKeylessCloses: the keyless probe (GET /, HEAD /) and a request
// with a wrong key are answered with Connection: close and the connection
// ends; a keyed request keeps its connection (the positive control).
func TestDoorKeylessCloses(t *testing.T) {
	llm := engine(t, fakellm.Options{})
	gw := startGateway(t, llm.URL(), Options{})
	addr := strings.TrimPrefix(gw.base, "http://")
	for _, req := range []string{
		"GET / HTTP/1.1\r\nHost: gw\r\n\r\n",
		"HEAD / HTTP/1.1\r\nHost: gw\r\n\r\n",
		"GET /v1/models HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer sk-wrong\r\n\r\n",
	} {
		c := doortest.Dial(t, addr)
		st, _, closing, err := c.Do(req)
		if err != nil || !closing {
			t.Fatalf("%q: status %d close %v err %v, want an answer with Connection: close", req, st, closing, err)
		}
		c.WaitClosed(t)
	}
	c := doortest.Dial(t, addr)
	req := "GET /v1/models HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + gw.Key() + "\r\n\r\n"
	for range 2 {
		if st, _, closing, err := c.Do(req); err != nil || st != http.StatusOK || closing {
			t.Fatalf("keyed listing: status %d close %v err %v, want 200 kept alive", st, closing, err)
		}
	}
}
