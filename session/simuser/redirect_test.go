package simuser

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harnessd/harnessd/config"
)

// Guards the redirect policy of the model user's client (63fc567:
// userClient's CheckRedirect is redirect.SameOrigin). The endpoint the
// configuration names (front, on 127.0.0.1) answers the Chat Completions
// call with a 307: to another port of the same host, the redirect is
// refused and the other server never sees the call, nor the model key
// (Go's own client would follow it with the key: it strips Authorization
// only across hosts); within front's origin (the positive control) it is
// followed and the user's answer comes back, the key with it.
func TestModelUserFollowsRedirectsOnlyWithinItsEndpoint(t *testing.T) {
	const keyEnv, key = "HARNESSD_TEST_SIMUSER_KEY", "user-model-key"
	t.Setenv(keyEnv, key)
	completion := func(w http.ResponseWriter, text string) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"`+text+`"}}]}`)
	}
	var otherHits atomic.Int32
	var otherAuth atomic.Value
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		otherAuth.Store(r.Header.Get("Authorization"))
		completion(w, "answered by the other port")
	}))
	t.Cleanup(other.Close)
	var moved atomic.Int32
	var hereAuth atomic.Value
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away/v1/chat/completions":
			http.Redirect(w, r, other.URL+"/v1/chat/completions", http.StatusTemporaryRedirect)
		case "/moved/v1/chat/completions":
			moved.Add(1)
			http.Redirect(w, r, "/here/v1/chat/completions", http.StatusTemporaryRedirect)
		case "/here/v1/chat/completions":
			hereAuth.Store(r.Header.Get("Authorization"))
			completion(w, "answered here")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(front.Close)
	ask := func(t *testing.T, root string) (*Answer, error) {
		t.Helper()
		cfg, err := config.ParseConfig([]byte(`
harness:
  command: [/bin/true]
user:
  model:
    url: `+root+`
    name: user-model
    api_key_env: `+keyEnv+`
`), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return NewModel(cfg.User.Model).Ask(ctx, Query{Type: "start", EpisodeID: "e1"})
	}

	t.Run("same origin", func(t *testing.T) {
		ans, err := ask(t, front.URL+"/moved")
		if err != nil || ans.Message == nil || *ans.Message != "answered here" {
			t.Fatalf("ask through a redirect within the endpoint's server: %+v, %v", ans, err)
		}
		if moved.Load() == 0 || hereAuth.Load() != "Bearer "+key {
			t.Errorf("the control: %d redirects, key %q at the redirect's target", moved.Load(), hereAuth.Load())
		}
	})
	t.Run("another port", func(t *testing.T) {
		ans, err := ask(t, front.URL+"/away")
		if err == nil {
			msg := ""
			if ans.Message != nil {
				msg = *ans.Message
			}
			t.Errorf("ask through a redirect to %s answered %q, want the redirect refused", other.URL, msg)
		}
		if n := otherHits.Load(); n != 0 {
			t.Errorf("the server on the other port got %d calls (Authorization %q)", n, otherAuth.Load())
		}
	})
}
