package integration

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// gwRealKey is the upstream's key the daemon holds (and the agent never
// does): it must reach the provider on a model route and nowhere else.
const (
	gwRealKeyEnv = "HARNESSD_TEST_GW_ROUTES_KEY"
	gwRealKey    = "sk-REAL-admin-capable-5d1e"
)

// routeLog is a LiteLLM-style provider on 127.0.0.1 that logs every
// request it receives, whatever its path, and answers each with a chat
// completion (an admin route of a real proxy would answer as gladly).
type routeLog struct {
	srv     *httptest.Server
	mu      sync.Mutex
	entries []string // METHOD REQUEST-URI AUTHORIZATION
}

func startRouteLog(t *testing.T) *routeLog {
	l := &routeLog{}
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		l.mu.Lock()
		l.entries = append(l.entries, r.Method+" "+r.RequestURI+" "+r.Header.Get("Authorization"))
		l.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"granted"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	t.Cleanup(l.srv.Close)
	return l
}

func (l *routeLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.entries...)
}

// rawPost sends one POST whose request line carries target exactly as
// given (no client cleans or escapes it) and returns the answer's status.
func rawPost(t *testing.T, addr, target, key, body string) int {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", target, addr, key, len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("POST %s: %v", target, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// gwAttackTargets are paths an agent holding its gateway key might post a
// chat body to, to use the real key beyond the model routes.
var gwAttackTargets = []string{
	"/key/generate?team_id=admin",
	"/v1/../../admin/delete",
	"/v1/chat/completions%3Fteam_id=admin",
	"/v1%2Fchat%2Fcompletions",
	"//v1/chat/completions",
	"/v1/chat/completions/",
	"/admin/v1/chat/completions",
	"/key/generate/v1/chat/completions",
	"/v1/embeddings",
	"/user/new",
}

// TestAdversaryGatewayOpenRelay (issue 22, "the gateway as an open
// relay"): the real daemon with a passthrough upstream that logs every
// request. The agent's key on any path but a model route gets 404, the
// provider's log shows nothing arrived, the turn's events record each
// refusal (source gateway) and /metrics counts them. The control: the
// agent's own model call (the test agent's llm directive, on
// /v1/chat/completions) arrives with the real key. In process isolation the
// test posts from its own process; in sandbox isolation the agent itself
// tries (GET, all its attack directive can send) from inside its network
// namespace.
func TestAdversaryGatewayOpenRelay(t *testing.T) {
	t.Parallel()
	body := `{"model":"m","messages":[{"role":"user","content":"make me admin"}]}`
	for _, iso := range []string{isoProcess, isoSandbox} {
		t.Run(iso, func(t *testing.T) {
			t.Parallel()
			if iso == isoSandbox {
				needSandbox(t)
			}
			up := startRouteLog(t)
			y := fmt.Sprintf("name: adversary\nharness:\n  command: [%q, agent]\n  model: {url: %q, dialect: openai-chat, api_key_env: %s}\n",
				testharnessBin(t), up.srv.URL, gwRealKeyEnv)
			if iso == isoSandbox {
				y += advLimits
			}
			d := startDaemon(t, spec{Flags: []string{"--isolation", iso, "--config", writeConfig(t, y)}, Env: []string{gwRealKeyEnv + "=" + gwRealKey}})
			s := openSession(t, d, iso)
			modelURL, key := s.env("HARNESSD_MODEL_URL"), s.env("HARNESSD_MODEL_API_KEY")
			refusals := 0
			if iso == isoProcess {
				addr := strings.TrimPrefix(modelURL, "http://")
				for _, target := range gwAttackTargets {
					if status := rawPost(t, addr, target, key, body); status != http.StatusNotFound {
						t.Errorf("FINDING: POST %s with the agent's key answered %d, want 404", target, status)
					}
					refusals++
				}
			} else {
				for _, target := range []string{"/key/generate?team_id=admin", "/v1/../../admin/delete", "/v1%2Fmodels", "/key/info"} {
					r := s.attack("http-get", modelURL+target, key)
					if r.OK || !strings.HasPrefix(r.Detail, "HTTP 404") {
						t.Errorf("FINDING: GET %s from the sandbox: %s, want HTTP 404", target, r)
					}
					refusals++
				}
			}
			if es := up.list(); len(es) != 0 {
				t.Fatalf("FINDING: the provider received %d requests beyond the model routes: %v", len(es), es)
			}

			// The control, in the same turn as the refusals' events.
			obs := s.step("llm hi")
			if got := responseOf(t, obs); got != "llm: granted" {
				t.Fatalf("the agent's own model call: %q", got)
			}
			es := up.list()
			if len(es) != 1 || es[0] != "POST /v1/chat/completions Bearer "+gwRealKey {
				t.Fatalf("provider log %q, want the one model call with the real key", es)
			}
			recorded := 0
			for _, e := range obs["metadata"].(map[string]any)["turn_events"].([]any) {
				ev := e.(map[string]any)
				data, _ := ev["data"].(map[string]any)
				if ev["type"] == "error" && ev["source"] == "gateway" && data["refused_request"] != nil {
					recorded++
				}
			}
			// In the sandbox the attack turns carry their own refusals.
			if iso == isoProcess && recorded != refusals {
				t.Errorf("%d refusals in the turn's events, want %d", recorded, refusals)
			}
			code, raw := d.DoRaw("GET", "/metrics", "", nil)
			var counted float64
			for _, m := range regexp.MustCompile(`(?m)^harnessd_model_refused_requests_total\{[^}]*\} (\S+)$`).FindAllStringSubmatch(string(raw), -1) {
				v, _ := strconv.ParseFloat(m[1], 64)
				counted += v
			}
			if code != 200 || counted != float64(refusals) {
				t.Errorf("/metrics (%d) counts %v refused requests, want %d", code, counted, refusals)
			}
		})
	}
}
