package streamjson

import (
	"encoding/json"
	"reflect"
	"testing"
)

// oldInitLists is system/init's lists as they were decoded before they
// were read an element at a time: the line whole into slices.
func oldInitLists(raw []byte) ([]string, []mcpServer, error) {
	var in struct {
		Tools      []string    `json:"tools"`
		MCPServers []mcpServer `json:"mcp_servers"`
	}
	err := json.Unmarshal(raw, &in)
	return in.Tools, in.MCPServers, err
}

// newInitLists is what mapper.init reads of the line now.
func newInitLists(raw []byte) ([]string, []mcpServer, error) {
	var in initInfo
	err := json.Unmarshal(raw, &in)
	return in.Tools, in.MCPServers, err
}

// initDiffSeeds are system/init lines in the shapes a harness (untrusted)
// may give: the keys in other cases, escaped, twice, null, of the wrong
// type; the lists nested, empty, shortened and grown again.
var initDiffSeeds = []string{
	`{"type":"system","subtype":"init","session_id":"s","tools":["Bash","mcp__env__a\u0064d",null],"mcp_servers":[{"name":"env","status":"failed"},{"Name":"x","status":"ok","other":1},null]}`,
	`{"tools":["a","b"],"tools":[null]}`,
	`{"tools":["a","b"],"Tools":["c"],"TOOLS":[null,null]}`,
	`{"mcp_servers":[{"name":"env","status":"failed"}],"mcp_servers":[{"name":"x"}]}`,
	`{"mcp_servers":[{"name":"a"},{"name":"b","status":"s"}],"MCP_SERVERS":[{}],"mcp_servers":[null,{"status":"t"}]}`,
	`{"\u0074ools":["x"],"tools":[null],"mcp_\u0073ervers":[{"n\u0061me":"e"}],"mcp_servers":null}`,
	`{"tools":[],"mcp_servers":[]}`,
	`{"tools":null,"mcp_servers":null}`,
	`{"tools":"x"}`, `{"tools":[1]}`, `{"tools":{}}`, `{"mcp_servers":[1]}`, `{"mcp_servers":[{"name":1}]}`,
	`{"mcp_servers":[[]]}`, `{"tools":[[]]}`, `{"mcp_servers":[{"name":"a","name":null,"NAME":"b","status":"\u00e9"}]}`,
	` { "tools" : [ "a" , "b" ] , "mcp_servers" : [ { "name" : "x" } ] } `,
	`{"toolſ":["k"],"mcp_ſervers":[{"name":"K"}]}`,
	"{\"tools\":[\"\xff\"],\"mcp_servers\":[{\"name\":\"\xfe\"}]}",
}

// FuzzInitLists checks that system/init's tools and mcp_servers decode to
// what json.Unmarshal into the former []string and slice of structs gave,
// the line read or refused alike, for any bytes.
func FuzzInitLists(f *testing.F) {
	for _, s := range initDiffSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		wt, ws, werr := oldInitLists(raw)
		gt, gs, gerr := newInitLists(raw)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: error %v, was %v", raw, gerr, werr)
		}
		if werr != nil {
			return
		}
		if !reflect.DeepEqual(wt, gt) || !reflect.DeepEqual(ws, gs) || (wt == nil) != (gt == nil) || (ws == nil) != (gs == nil) {
			t.Fatalf("%q: tools %#v servers %#v, was %#v %#v", raw, gt, gs, wt, ws)
		}
	})
}
