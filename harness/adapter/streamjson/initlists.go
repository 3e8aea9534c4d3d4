package streamjson

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/harnessd/harnessd/internal/jsonlist"
	"github.com/harnessd/harnessd/internal/jsonscan"
	"github.com/harnessd/harnessd/wire"
)

// mcpServer is one server of system/init's mcp_servers, as the turn's
// Extra keeps it.
type mcpServer struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

// errNotList is the error of a list field that is not a JSON array.
var errNotList = errors.New("not a list")

// initLists decodes system/init's tools (strings) and mcp_servers, each
// element by itself into a list sized once: decoded whole into []string
// and a slice of structs, then a map per server, a list of 65,000 empty
// objects ({},, 195 KB) allocated 10 MiB as tools and 32 MiB as servers.
// A list absent or null is nil; an element that does not decode fails
// both, as the whole decode did.
func initLists(rawTools, rawServers json.RawMessage) (tools []string, servers []mcpServer, err error) {
	if isList(rawTools) {
		tools = make([]string, 0, count(rawTools))
		if !jsonscan.Elements(rawTools, func(e []byte) bool {
			var s string
			if s, err = stringElem(e); err == nil {
				tools = append(tools, s)
			}
			return err == nil
		}) {
			return nil, nil, cmpErr(err)
		}
	} else if !absent(rawTools) {
		return nil, nil, errNotList
	}
	if isList(rawServers) {
		servers = make([]mcpServer, 0, count(rawServers))
		if !jsonscan.Elements(rawServers, func(e []byte) bool {
			var s mcpServer
			if !fastServer(e, &s) {
				s = mcpServer{}
				err = json.Unmarshal(e, &s)
			}
			servers = append(servers, s)
			return err == nil
		}) {
			return nil, nil, cmpErr(err)
		}
	} else if !absent(rawServers) {
		return nil, nil, errNotList
	}
	return tools, servers, nil
}

func cmpErr(err error) error {
	if err == nil {
		return errNotList
	}
	return err
}

func isList(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '['
}

func absent(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

func count(list []byte) int {
	n := 0
	jsonscan.Elements(list, func([]byte) bool { n++; return true })
	return n
}

// stringElem decodes a list's string element (null is "").
func stringElem(e []byte) (string, error) {
	if s, ok := wire.PlainString(e); ok {
		return s, nil
	}
	var s string
	err := json.Unmarshal(e, &s)
	return s, err
}

// fastServer fills s from the object e when its keys are plain and each
// is "name" or "status" (strings without escapes) or not a case variant
// of them; false leaves e to json.Unmarshal.
func fastServer(e []byte, s *mcpServer) bool {
	if string(e) == "null" {
		return true
	}
	return wire.ObjectFields(e, func(k, v []byte) bool {
		var dst *string
		switch string(k) {
		case "name":
			dst = &s.Name
		case "status":
			dst = &s.Status
		default:
			return !jsonlist.MayName(k, "name", "status")
		}
		var ok bool
		*dst, ok = wire.PlainString(v)
		return ok
	})
}
