package streamjson

import (
	"encoding/json"

	"github.com/harnessd/harnessd/internal/jsonlist"
	"github.com/harnessd/harnessd/wire"
)

// mcpServer is one server of system/init's mcp_servers, as the turn's
// Extra keeps it.
type mcpServer struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

// system/init's tools (strings) and mcp_servers are decoded each element
// by itself (toolList, serverList): decoded whole into []string and a
// slice of structs, then a map per server, a list of 65,000 empty objects
// ({},, 195 KB) allocated 10 MiB as tools and 32 MiB as servers. A list
// absent or null is nil; an element that does not decode fails the line,
// as the whole decode did. json.Unmarshal calls UnmarshalJSON on the list
// as it stands for each key that names the field (in any case, escaped,
// given twice), and jsonlist.Overlay decodes over it as json.Unmarshal did
// over the slice: a second "tools" merges into the first's elements.

// toolList is system/init's tools.
type toolList []string

// UnmarshalJSON decodes the tools b over the list.
func (l *toolList) UnmarshalJSON(b []byte) error {
	v, err := jsonlist.Overlay(*l, b, func(e []byte, s *string) error {
		if p, ok := wire.PlainString(e); ok {
			*s = p
			return nil
		}
		return json.Unmarshal(e, s) // null leaves *s, as it did
	})
	*l = v
	return err
}

// serverList is system/init's mcp_servers.
type serverList []mcpServer

// UnmarshalJSON decodes the servers b over the list.
func (l *serverList) UnmarshalJSON(b []byte) error {
	v, err := jsonlist.Overlay(*l, b, func(e []byte, s *mcpServer) error {
		fast := *s
		if fastServer(e, &fast) {
			*s = fast
			return nil
		}
		return json.Unmarshal(e, s)
	})
	*l = v
	return err
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
