package fakellm_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/testharness/fakellm"
)

// errorMessage decodes an error body in d's shape and returns its message
// and status/type label; a body not in that shape fails the test.
func errorMessage(t *testing.T, d fakellm.Dialect, body string) (msg, label string) {
	t.Helper()
	switch d {
	case fakellm.Anthropic:
		e := decode[struct {
			Type  string `json:"type"`
			Error *struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}](t, body)
		if e.Type != "error" || e.Error == nil || e.Error.Type == "" {
			t.Fatalf("not an Anthropic error: %s", body)
		}
		return e.Error.Message, e.Error.Type
	case fakellm.Gemini:
		e := decode[struct {
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
				Status  string `json:"status"`
			} `json:"error"`
		}](t, body)
		if e.Error == nil || e.Error.Code == 0 || e.Error.Status == "" {
			t.Fatalf("not a Gemini error: %s", body)
		}
		return e.Error.Message, e.Error.Status
	default:
		e := decode[struct {
			Error *struct {
				Message string `json:"message"`
				Type    string `json:"type"`
			} `json:"error"`
		}](t, body)
		if e.Error == nil || e.Error.Type == "" {
			t.Fatalf("not an OpenAI error: %s", body)
		}
		return e.Error.Message, e.Error.Type
	}
}

// TestErrorRule answers scripted HTTP errors in each dialect's shape, for
// streaming requests too, and recovers on the next request.
func TestErrorRule(t *testing.T) {
	sc := mustScript(t, `{"rules": [
	  {"name": "fail", "when": {"nth": 1}, "reply": {"error": {"status": 400, "message": "scripted failure {{n}}"}}},
	  {"name": "busy", "when": {"nth": 2}, "reply": {"error": {"status": 529, "message": "overloaded"}}}
	]}`)
	wantLabel := map[fakellm.Dialect][2]string{
		fakellm.Anthropic:       {"invalid_request_error", "overloaded_error"},
		fakellm.OpenAIChat:      {"invalid_request_error", "server_error"},
		fakellm.OpenAIResponses: {"invalid_request_error", "server_error"},
		fakellm.Gemini:          {"INVALID_ARGUMENT", "INTERNAL"},
	}
	forEachDialect(t, func(t *testing.T, dc dialectClient, stream bool) {
		s, base, hc := startServer(t, sc)
		c := conv{Model: "m", Users: []string{"hi"}, Tools: []tspec{{Name: "x"}}, Stream: stream}
		for i, status := range []int{400, 529} {
			resp := dc.post(t, hc, base, c)
			body := mustRead(t, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, body)
			}
			wantJSON(t, resp)
			msg, label := errorMessage(t, dc.name, body)
			if label != wantLabel[dc.name][i] || (i == 0 && msg != "scripted failure 1") {
				t.Errorf("error %q %q", msg, label)
			}
		}
		if got := dc.do(t, hc, base, c); got.Text != "MOCK-REPLY: hi" {
			t.Errorf("after errors: %+v", got)
		}
		log := s.Requests()
		if log[0].Outcome != fakellm.OutcomeError || log[0].Status != 400 || log[0].Rule != "fail" || log[1].Status != 529 {
			t.Errorf("log %+v", log[:2])
		}
	})
}

// TestMalformedRequests: bad bodies and routes get errors in the dialect's
// shape, are logged, and do not count for nth.
func TestMalformedRequests(t *testing.T) {
	s, base, hc := startServer(t, nil)
	cases := []struct {
		name, method, path, body string
		d                        fakellm.Dialect
		status                   int
		outcome                  string
	}{
		{"anthropic not json", "POST", "/v1/messages?beta=true", `{"model":`, fakellm.Anthropic, 400, fakellm.OutcomeBadRequest},
		{"anthropic wrong type", "POST", "/v1/messages", `{"messages":"hi"}`, fakellm.Anthropic, 400, fakellm.OutcomeBadRequest},
		{"anthropic count not json", "POST", "/v1/messages/count_tokens", `[`, fakellm.Anthropic, 400, fakellm.OutcomeBadRequest},
		{"chat not an object", "POST", "/v1/chat/completions", `[1,2]`, fakellm.OpenAIChat, 400, fakellm.OutcomeBadRequest},
		{"chat stream not bool", "POST", "/chat/completions", `{"stream":"yes"}`, fakellm.OpenAIChat, 400, fakellm.OutcomeBadRequest},
		{"responses input number", "POST", "/responses", `{"input":5}`, fakellm.OpenAIResponses, 400, fakellm.OutcomeBadRequest},
		{"responses empty body", "POST", "/v1/responses", ``, fakellm.OpenAIResponses, 400, fakellm.OutcomeBadRequest},
		{"gemini contents wrong", "POST", "/v1beta/models/m:generateContent", `{"contents":{}}`, fakellm.Gemini, 400, fakellm.OutcomeBadRequest},
		{"gemini countTokens garbage", "POST", "/v1beta/models/m:countTokens", `garbage`, fakellm.Gemini, 400, fakellm.OutcomeBadRequest},
		{"anthropic GET", "GET", "/v1/messages", ``, fakellm.Anthropic, 405, fakellm.OutcomeNotFound},
		{"chat GET", "GET", "/v1/chat/completions", ``, fakellm.OpenAIChat, 405, fakellm.OutcomeNotFound},
		{"openai unknown route", "POST", "/v1/embeddings", `{}`, fakellm.OpenAIChat, 404, fakellm.OutcomeNotFound},
		{"gemini unknown method", "POST", "/v1beta/models/m:embedContent", `{}`, fakellm.Gemini, 404, fakellm.OutcomeNotFound},
		{"anthropic unknown route", "POST", "/v1/messages/batches", `{}`, fakellm.Anthropic, 404, fakellm.OutcomeNotFound},
	}
	for _, tc := range cases {
		req, _ := http.NewRequestWithContext(t.Context(), tc.method, base+tc.path, strings.NewReader(tc.body))
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := mustRead(t, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d: %s", tc.name, resp.StatusCode, tc.status, body)
			continue
		}
		if msg, _ := errorMessage(t, tc.d, body); msg == "" {
			t.Errorf("%s: empty error message", tc.name)
		}
	}
	log := s.Requests()
	if len(log) != len(cases) {
		t.Fatalf("%d log entries, want %d", len(log), len(cases))
	}
	for i, e := range log {
		if e.N != 0 || e.Outcome != cases[i].outcome || e.Status != cases[i].status || e.Dialect != cases[i].d || e.Error == "" {
			t.Errorf("%s: entry %+v", cases[i].name, e)
		}
	}
	// The first well-formed request is still n=1.
	chatClient.do(t, hc, base, conv{Model: "m", Users: []string{"x"}})
	if e := s.Requests()[len(cases)]; e.N != 1 {
		t.Errorf("first good request n=%d", e.N)
	}
}

func TestBodyEncodingAndLimit(t *testing.T) {
	s := fakellm.New(fakellm.Options{MaxBody: 4096})
	base, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	defer func() { s.Close(); tr.CloseIdleConnections() }()
	hc := &http.Client{Transport: tr}

	send := func(body []byte, encoding string) (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(body))
		if encoding != "" {
			req.Header.Set("Content-Encoding", encoding)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, mustRead(t, resp.Body)
	}
	plain := []byte(`{"model":"m","messages":[{"role":"user","content":"zipped"}]}`)
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write(plain)
	zw.Close()
	if code, body := send(zb.Bytes(), "gzip"); code != 200 || !strings.Contains(body, "MOCK-AUX") {
		t.Errorf("gzip: %d %s", code, body)
	}
	if code, body := send(plain, "br"); code != http.StatusUnsupportedMediaType {
		t.Errorf("br: %d %s", code, body)
	}
	big := []byte(`{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`)
	if code, body := send(big, ""); code != http.StatusRequestEntityTooLarge {
		t.Errorf("big: %d %s", code, body)
	}
	var bz bytes.Buffer
	zw = gzip.NewWriter(&bz)
	zw.Write(big)
	zw.Close()
	if code, body := send(bz.Bytes(), "gzip"); code != http.StatusRequestEntityTooLarge {
		t.Errorf("big gzip: %d %s", code, body)
	}
}

// guard bounds a wait that only ends when the behaviour under test works;
// it is a hang guard, not a timing assertion.
func guard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestDelayHonoursDisconnect: a delayed answer ends as soon as the client
// goes away, in every dialect and framing.
func TestDelayHonoursDisconnect(t *testing.T) {
	sc := mustScript(t, `{"rules": [{"name": "slow", "when": {"user_contains": "slow"}, "reply": {"delay": "1h", "text": "late"}},
	  {"name": "brief", "when": {"user_contains": "brief"}, "reply": {"delay": "1ms", "text": "after a moment"}}]}`)
	forEachDialect(t, func(t *testing.T, dc dialectClient, stream bool) {
		s, base, hc := startServer(t, sc)
		// A short delay answers normally.
		if got := dc.do(t, hc, base, conv{Model: "m", Users: []string{"brief"}, Stream: stream}); got.Text != "after a moment" {
			t.Errorf("brief delay: %+v", got)
		}

		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		errc := make(chan error, 1)
		go func() {
			c := conv{Model: "m", Users: []string{"slow"}, Stream: stream}
			resp, err := postJSON(ctx, hc, dc.url(base, c), dc.body(c))
			if err == nil {
				resp.Body.Close()
				err = errors.New("got a response")
			}
			errc <- err
		}()
		if _, err := s.Wait(guard(t), func(es []fakellm.Entry) bool {
			return len(es) == 2 && es[1].Rule == "slow" && es[1].Outcome == fakellm.OutcomePending
		}); err != nil {
			t.Fatalf("delayed request never arrived: %v", err)
		}
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("client: %v", err)
		}
		es, err := s.Wait(guard(t), func(es []fakellm.Entry) bool { return es[1].Outcome != fakellm.OutcomePending })
		if err != nil {
			t.Fatalf("the delay did not end on disconnect: %v", err)
		}
		if es[1].Outcome != fakellm.OutcomeCanceled || !strings.Contains(es[1].Error, "canceled") {
			t.Errorf("entry %+v", es[1])
		}
	})
}

// TestCloseEndsDelay: Close ends a pending delay at once (not through the
// shutdown timeout) and ends Wait.
func TestCloseEndsDelay(t *testing.T) {
	s := fakellm.New(fakellm.Options{Script: mustScript(t, `{"rules": [{"when": {}, "reply": {"delay": "1h"}}]}`)})
	base, err := s.Start("")
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	errc := make(chan error, 1)
	go func() {
		resp, err := postJSON(context.Background(), &http.Client{Transport: tr}, base+"/v1/chat/completions",
			map[string]any{"messages": []any{map[string]any{"role": "user", "content": "x"}}})
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		errc <- err
	}()
	if _, err := s.Wait(guard(t), func(es []fakellm.Entry) bool { return len(es) == 1 }); err != nil {
		t.Fatal(err)
	}
	waitErr := make(chan error, 1)
	go func() {
		_, err := s.Wait(context.Background(), func([]fakellm.Entry) bool { return false })
		waitErr <- err
	}()
	if err := s.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	<-errc // the client sees the connection end, one way or another
	if err := <-waitErr; !errors.Is(err, fakellm.ErrClosed) {
		t.Errorf("Wait after Close: %v", err)
	}
	e := s.Requests()[0]
	if e.Outcome != fakellm.OutcomeCanceled || !strings.Contains(e.Error, fakellm.ErrClosed.Error()) {
		t.Errorf("entry %+v, want canceled by server close", e)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if _, err := s.Start(""); !errors.Is(err, fakellm.ErrClosed) {
		t.Errorf("Start after Close: %v", err)
	}
}
