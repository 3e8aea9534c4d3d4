// Package recordfile owns the names of an episode's files in record_dir:
// the record (<episode>.jsonl) and the training export
// (<episode>.export.json), under an injective mapping of episode ids onto
// file names. It must not read or write them.
package recordfile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// maxFileName bounds FileName's result, leaving room for the
// ".export.json" suffix under the usual 255-byte name limit.
const maxFileName = 200

// FileName maps an episode id onto the base of its file names in
// record_dir (the record, the export), injectively (ids "a/b"
// and "a_b" both became a_b): "%", "/", "\\" and control bytes are
// percent-escaped, "" "." and ".." escaped whole, and a name longer than
// maxFileName keeps its start and ends in "%~" and a hash of the id ("%~"
// cannot occur in an escaped name).
func FileName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' || c == '/' || c == '\\' || c < 0x20 || c == 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	name := b.String()
	switch name {
	case "":
		return "%"
	case ".", "..":
		return strings.ReplaceAll(name, ".", "%2E")
	}
	if len(name) > maxFileName {
		sum := sha256.Sum256([]byte(s))
		cut := maxFileName - 2 - 16
		if i := strings.LastIndexByte(name[:cut], '%'); i >= cut-2 {
			cut = i // not inside an escape
		}
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = name[:cut] + "%~" + hex.EncodeToString(sum[:8])
	}
	return name
}

// Record is where an episode's record is written in record_dir:
// <record_dir>/<episode>.jsonl.
func Record(recordDir, episodeID string) string {
	return filepath.Join(recordDir, FileName(episodeID)+".jsonl")
}

// Export is where an episode's training export is written in record_dir:
// <record_dir>/<episode>.export.json.
func Export(recordDir, episodeID string) string {
	return filepath.Join(recordDir, FileName(episodeID)+".export.json")
}
