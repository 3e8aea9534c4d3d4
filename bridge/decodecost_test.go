package bridge

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/doorcap"
	"github.com/harnessd/harnessd/internal/testbin"
)

// A tool call's JSON objects and arrays are charged to the door's body
// budget besides its bytes, for what mcp-go's decoding makes of them (the
// arguments become Go values). 2 MiB of empty objects as arguments cost
// far more than the 16 MiB budget; they are refused with 413
// (door_decode_cost) before they are decoded. The controls: the same call
// with 2 MiB of text as its argument is served, and one with 2,000 objects.
func TestToolCallDecodingIsChargedToTheBodyBudget(t *testing.T) {
	srv, addr := doorServer(t, doorcap.Bounds{})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	send := func(raw string) (*http.Response, string) {
		if _, err := io.WriteString(c, raw); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	resp, _ := send(initializeRequest(addr, srv.Token()))
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d", resp.StatusCode)
	}
	call := func(args string) (*http.Response, string) {
		body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"x":` + args + `}}}`
		return send(fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
			"Accept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-11-25\r\nContent-Length: %d\r\n\r\n%s",
			EndpointPath, addr, srv.Token(), sid, len(body), body))
	}
	objects := func(n int) string { return "[" + strings.TrimSuffix(strings.Repeat("{},", n), ",") + "]" }

	var body string
	got := testbin.Allocated(func() { resp, body = call(objects(700_000)) })
	t.Logf("2 MiB of empty objects as arguments: %d %s, %d MiB allocated", resp.StatusCode, resp.Header.Get("X-Harnessd-Refused"), got>>20)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.Header.Get("X-Harnessd-Refused") != doorcap.ReasonDecodeCost {
		t.Errorf("2 MiB of empty objects as arguments: %d %s, want 413 door_decode_cost", resp.StatusCode, body)
	}
	if got > 32<<20 {
		t.Errorf("2 MiB of empty objects as arguments allocated %d MiB", got>>20)
	}
	if resp, body := call(`"` + strings.Repeat("word ", 400_000) + `"`); resp.StatusCode != http.StatusOK || !strings.Contains(body, "word word") {
		t.Errorf("the control, 2 MiB of text: %d %.200s", resp.StatusCode, body)
	}
	if resp, body := call(objects(2000)); resp.StatusCode != http.StatusOK || !strings.Contains(body, "{},{}") {
		t.Errorf("the control, 2,000 objects: %d %.200s", resp.StatusCode, body)
	}

	// An array's elements are charged like its objects, scalars too:
	// 1 MiB of ones (1,) in a call's _meta allocated 193 MiB. The control:
	// 2,000 numbers as arguments are served.
	var answer string
	meta := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","_meta":{"x":[` +
		strings.Repeat("1,", 512<<10) + `1]},"arguments":{}}}`
	got = testbin.Allocated(func() {
		resp, answer = send(fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
			"Accept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-11-25\r\nContent-Length: %d\r\n\r\n%s",
			EndpointPath, addr, srv.Token(), sid, len(meta), meta))
	})
	t.Logf("1 MiB of ones in _meta: %d %s, %d MiB allocated", resp.StatusCode, resp.Header.Get("X-Harnessd-Refused"), got>>20)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.Header.Get("X-Harnessd-Refused") != doorcap.ReasonDecodeCost {
		t.Errorf("1 MiB of ones in _meta: %d %.200s, want 413 door_decode_cost", resp.StatusCode, answer)
	}
	if got > 16<<20 {
		t.Errorf("1 MiB of ones in _meta allocated %d MiB", got>>20)
	}
	if resp, body := call("[" + strings.Repeat("7,", 1999) + "7]"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "7,7") {
		t.Errorf("the control, 2,000 numbers: %d %.200s", resp.StatusCode, body)
	}
}
