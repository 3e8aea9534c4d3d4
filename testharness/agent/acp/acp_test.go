package acp_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

// TestACPFrontEnd speaks raw ACP to the acp front end.
func TestACPFrontEnd(t *testing.T) {
	cmd := exec.Command(testbin.Path(t, "testharness"), "agent", "--protocol", "acp")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	type msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
		Result  map[string]any  `json:"result"`
		Error   map[string]any  `json:"error"`
	}
	// call sends a request and returns the messages up to its response.
	call := func(id int, method, params string) []msg {
		t.Helper()
		fmt.Fprintf(in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params)
		var got []msg
		for sc.Scan() {
			var m msg
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.JSONRPC != "2.0" {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
			got = append(got, m)
			if string(m.ID) == fmt.Sprint(id) {
				return got
			}
		}
		t.Fatalf("stdout ended: %v", sc.Err())
		return nil
	}
	if r := call(1, "initialize", `{"protocolVersion":1}`); r[0].Result["protocolVersion"] != 1.0 {
		t.Fatalf("initialize: %+v", r)
	}
	if r := call(2, "session/new", `{"cwd":"/tmp","mcpServers":[{"type":"http","name":"env","url":"http://x","headers":{"Authorization":"Bearer t"}}]}`); r[0].Error == nil {
		t.Fatalf("headers as a map accepted: %+v", r)
	}
	r := call(3, "session/new", `{"cwd":"/tmp","mcpServers":[]}`)
	if r[0].Result["sessionId"] != "testharness-session-1" {
		t.Fatalf("session/new: %+v", r)
	}
	r = call(4, "session/prompt", `{"sessionId":"testharness-session-1","prompt":[{"type":"text","text":"reply a b"}]}`)
	if len(r) != 3 || r[0].Method != "session/update" || r[2].Result["stopReason"] != "end_turn" {
		t.Fatalf("prompt: %+v", r)
	}
	var text string
	for _, m := range r[:2] {
		var p struct {
			Update struct {
				Content struct{ Text string } `json:"content"`
			} `json:"update"`
		}
		json.Unmarshal(m.Params, &p)
		text += p.Update.Content.Text
	}
	if text != "a b" {
		t.Fatalf("chunks joined: %q", text)
	}
	if r := call(5, "fs/read_text_file", `{}`); r[0].Error["code"] != -32601.0 {
		t.Fatalf("unknown method: %+v", r)
	}
}
