// Package environ reads environment lists ("NAME=value" entries, as
// os.Environ and exec.Cmd.Env hold them). It owns only that; it must not
// decide which variables a process gets.
package environ

import "strings"

// Lookup returns the value of name in env. The last entry for a name wins,
// as it does for a started process.
func Lookup(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}
