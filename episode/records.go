package episode

import "strings"

// FileName maps an episode id onto the base of its file names in
// record_dir (the record, the export).
func FileName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '/' || r == 0 || r == '\\' {
			return '_'
		}
		return r
	}, s)
	if s == "" || s == "." || s == ".." {
		s = "episode"
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
