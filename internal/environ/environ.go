// Package environ reads and edits environment lists ("NAME=value"
// entries, as os.Environ and exec.Cmd.Env hold them). It owns only that;
// it must not decide which variables a process gets.
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

// Set replaces the first entry for kv's name in env with kv, or appends kv;
// it returns the list (env's array is reused).
func Set(env []string, kv string) []string {
	k, _, _ := strings.Cut(kv, "=")
	for i, e := range env {
		if ek, _, _ := strings.Cut(e, "="); ek == k {
			env[i] = kv
			return env
		}
	}
	return append(env, kv)
}
