package integration

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
)

// forkWS forks the episode of s's /ws connection count times and returns
// the siblings, each attached by a /ws connection of its own.
func forkWS(t testing.TB, d *daemon, s *advSession, count int) []*advSession {
	t.Helper()
	f := s.w.request(map[string]any{"type": "fork", "data": map[string]any{"count": count}})
	if f["type"] != "fork" {
		t.Fatalf("fork frame answered %v", f)
	}
	data := obj(t, f["data"], "fork reply")
	list, _ := data["siblings"].([]any)
	if len(list) != count {
		t.Fatalf("fork reply: %v", data)
	}
	var out []*advSession
	for i, v := range list {
		sb := obj(t, v, "sibling")
		id, _ := sb["session_id"].(string)
		if id == "" || sb["error"] != nil {
			t.Fatalf("sibling %d: %v", i, sb)
		}
		out = append(out, &advSession{t: t, d: d, w: dialRaw(t, d, "/ws?session_id="+id, nil)})
	}
	return out
}

// TestAdversaryForkSiblings runs the cross-session checks between a fork's
// siblings and between a sibling and its parent: each reaches its own doors
// with its own credentials (the positive control) and none reaches
// another's doors, files or processes in sandbox isolation; in process
// isolation the same attacks get through (the control that they can fail).
// The siblings' bridge tokens and gateway keys are their own.
func TestAdversaryForkSiblings(t *testing.T) {
	t.Parallel()
	upstream := fakeLLM(t)
	model := fmt.Sprintf("  model: {url: %q, name: adv-model, upstream: engine}\n", upstream+"/v1")
	tools := fmt.Sprintf("tools:\n  - name: demo\n    command: [%q, tools]\n", testharnessBin(t))
	for _, iso := range []string{isoSandbox, isoProcess} {
		t.Run(iso, func(t *testing.T) {
			t.Parallel()
			needSandbox(t)
			root := t.TempDir()
			y := fmt.Sprintf("name: adversary\nharness:\n  command: [%q, agent]\n%s%sworkspace: {root: %q}\n", testharnessBin(t), model, tools, root)
			if iso == isoSandbox {
				y += advLimits
			}
			d := startDaemon(t, spec{Flags: []string{"--isolation", iso, "--config", writeConfig(t, y), "--max-sessions", "3"}})
			parent := openSession(t, d, iso)
			parent.say("write secret.txt parent-secret")
			// The parent's host-side file (the only episode so far): what
			// a sibling would read or overwrite to reach its files.
			found, _ := filepath.Glob(filepath.Join(root, "*", "*", "workspace", "secret.txt"))
			if len(found) != 1 {
				t.Fatalf("the parent's secret.txt on the host: %v", found)
			}
			parentFiles := found[0]
			sibs := forkWS(t, d, parent, 2)
			all := []*advSession{parent, sibs[0], sibs[1]}
			names := []string{"parent", "sibling 1", "sibling 2"}
			type creds struct{ mcpURL, mcpToken, modelURL, modelKey string }
			cs := make([]creds, len(all))
			for i, s := range all {
				cs[i] = creds{s.env("HARNESSD_MCP_URL"), s.env("HARNESSD_MCP_TOKEN"), s.env("HARNESSD_MODEL_URL"),
					s.env("HARNESSD_MODEL_API_KEY")}
				// Each reaches its own doors: the attacks' addresses and
				// credentials are right.
				if r := s.attack("mcp-list", cs[i].mcpURL, cs[i].mcpToken); !r.OK {
					t.Fatalf("%s cannot list its own tools: %s", names[i], r)
				}
				if r := s.attack("http-get", cs[i].modelURL+"/v1/models", cs[i].modelKey); !r.OK {
					t.Fatalf("%s cannot reach its own model gateway: %s", names[i], r)
				}
			}
			for i := range cs {
				for j := range i {
					if cs[i].mcpToken == cs[j].mcpToken || cs[i].modelKey == cs[j].modelKey {
						t.Errorf("%s and %s share a bridge token or a gateway key", names[i], names[j])
					}
				}
			}
			for _, p := range [][2]int{{1, 2}, {1, 0}, {0, 1}} {
				a, b := all[p[0]], p[1]
				mcp := a.attack("mcp-list", cs[b].mcpURL, cs[b].mcpToken)
				gw := a.attack("http-get", cs[b].modelURL+"/v1/models", cs[b].modelKey)
				pid := strconv.Itoa(all[b].harnessPid())
				sig := a.attack("kill", pid, "0")
				if iso == isoSandbox {
					refused(t, mcp, "ECONNREFUSED", "")
					refused(t, gw, "ECONNREFUSED", "")
					refused(t, sig, "ESRCH", "EPERM")
					continue
				}
				succeeded(t, mcp)
				succeeded(t, gw)
				succeeded(t, sig)
			}
			rd := sibs[0].attack("read-file", parentFiles)
			wr := sibs[1].attack("write-file", parentFiles)
			if iso == isoSandbox {
				refused(t, rd, "ENOENT", "EACCES")
				refused(t, wr, "ENOENT", "EACCES", "EROFS")
				if got := parent.say("cat secret.txt"); got != "secret.txt: parent-secret" {
					t.Errorf("the parent's file after the siblings' attacks: %q", got)
				}
				return
			}
			succeeded(t, rd)
			succeeded(t, wr)
		})
	}
}
