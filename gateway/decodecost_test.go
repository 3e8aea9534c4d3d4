package gateway

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/doorcap"
	"github.com/harnessd/harnessd/internal/doorcap/doortest"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/testharness/fakellm"
)

// chatWithToolCalls is a chat request of about size bytes whose one
// assistant message has tool_calls of n empty objects, then a user turn.
func chatWithToolCalls(n int) []byte {
	calls := strings.TrimSuffix(strings.Repeat("{},", n), ",")
	return []byte(`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"","tool_calls":[` + calls +
		`]},{"role":"user","content":"go on"}],"max_tokens":8}`)
}

// A request's JSON objects and arrays are charged to the door's body
// budget besides its bytes (decodedValueBytes each), for what decoding makes of
// them: 2 MiB of empty tool calls ({},) allocated 1,728 MiB in the test
// process (the in-process fake engine's decoding included), so a body at
// MaxRequestBody cost gigabytes and a few in flight could end the daemon.
// Such a body now costs more than the whole budget and is refused with 413
// (X-Harnessd-Refused: door_decode_cost) before it is decoded. The
// controls: a request of the same size as text is served, and one with
// 2,000 tool calls (4 MiB charged) too.
func TestDecodingIsChargedToTheBodyBudget(t *testing.T) {
	llm := engine(t, fakellm.Options{})
	gw := startGateway(t, llm.URL(), Options{})
	addr := strings.TrimPrefix(gw.base, "http://")
	send := func(body []byte) doortest.Answer {
		head := fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer %s\r\n"+
			"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n", gw.Key(), len(body))
		return doortest.Send(t, addr, head, body)
	}

	flood := chatWithToolCalls(700_000) // 2 MiB
	var a doortest.Answer
	got := testbin.Allocated(func() { a = send(flood) })
	t.Logf("%d MiB of empty tool calls: %d %s, %d MiB allocated", len(flood)>>20, a.Status, a.Refused, got>>20)
	if a.Status != http.StatusRequestEntityTooLarge || a.Refused != doorcap.ReasonDecodeCost || !strings.Contains(a.Body, "once decoded") {
		t.Errorf("2 MiB of empty tool calls answered %d (%s) %s, want 413 door_decode_cost", a.Status, a.Refused, a.Body)
	}
	if got > 32<<20 {
		t.Errorf("2 MiB of empty tool calls allocated %d MiB", got>>20)
	}

	text := []byte(`{"model":"m","messages":[{"role":"user","content":"` + string(bytes.Repeat([]byte("word "), len(flood)/5)) + `"}],"max_tokens":8}`)
	if a := send(text); a.Status != http.StatusOK {
		t.Errorf("the control, %d MiB of text: %d %s", len(text)>>20, a.Status, a.Body)
	}
	if a := send(chatWithToolCalls(2000)); a.Status == http.StatusRequestEntityTooLarge || a.Refused != "" {
		t.Errorf("the control, 2,000 tool calls: %d (%s) %s", a.Status, a.Refused, a.Body)
	}
}

// An array's elements are charged like its objects, scalars too: decoding
// makes an element of its slice's type of each whatever it is (a decoder
// goes on past an element of the wrong kind, growing the slice), so 1 MiB
// of zeros (0,) as a message's content allocated 307 MiB (in every dialect
// alike: a list of messages, blocks, parts, tools). Such a body is now
// refused with 413 (door_decode_cost) before it is decoded. The control: a
// request with 2,000 stop sequences is served.
func TestArrayElementsAreCharged(t *testing.T) {
	llm := engine(t, fakellm.Options{})
	gw := startGateway(t, llm.URL(), Options{})
	addr := strings.TrimPrefix(gw.base, "http://")
	send := func(body []byte) doortest.Answer {
		head := fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer %s\r\n"+
			"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n", gw.Key(), len(body))
		return doortest.Send(t, addr, head, body)
	}
	zeros := []byte(`{"model":"m","messages":[{"role":"user","content":[` + strings.Repeat("0,", 512<<10) + `0]}],"max_tokens":8}`)
	var a doortest.Answer
	got := testbin.Allocated(func() { a = send(zeros) })
	t.Logf("1 MiB of zeros as a message's content: %d %s, %d MiB allocated", a.Status, a.Refused, got>>20)
	if a.Status != http.StatusRequestEntityTooLarge || a.Refused != doorcap.ReasonDecodeCost {
		t.Errorf("1 MiB of zeros as a message's content answered %d (%s) %.200s, want 413 door_decode_cost", a.Status, a.Refused, a.Body)
	}
	if got > 16<<20 {
		t.Errorf("1 MiB of zeros as a message's content allocated %d MiB", got>>20)
	}
	stops := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":[` + strings.Repeat(`"s",`, 1999) + `"s"],"max_tokens":8}`)
	if a := send(stops); a.Status != http.StatusOK || a.Refused != "" {
		t.Errorf("the control, 2,000 stop sequences: %d (%s) %.200s", a.Status, a.Refused, a.Body)
	}
}
