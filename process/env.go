package process

import (
	"os"
	"path"
	"sort"
	"strings"
)

// DefaultEnvAllowlist names the daemon environment variables a child inherits
// when the caller does not choose its own list. Patterns use path.Match syntax.
var DefaultEnvAllowlist = []string{
	"PATH", "LANG", "LC_*", "TZ", "TMPDIR", "USER", "LOGNAME",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS",
}

// Environ builds a child environment: the variables of base (typically
// os.Environ()) whose names match one of the allow patterns, then set on top.
// The result is sorted by name and has no duplicates. Nothing else of the
// daemon's environment is passed on.
func Environ(base []string, allow []string, set map[string]string) []string {
	vars := make(map[string]string, len(allow)+len(set))
	for _, kv := range base {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		for _, pat := range allow {
			if m, _ := path.Match(pat, name); m {
				vars[name] = val
				break
			}
		}
	}
	for k, v := range set {
		vars[k] = v
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// DefaultEnviron is Environ(os.Environ(), DefaultEnvAllowlist, set).
func DefaultEnviron(set map[string]string) []string {
	return Environ(os.Environ(), DefaultEnvAllowlist, set)
}

// lookEnv returns the value of name in env.
func lookEnv(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}
