package oneshot

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Placeholders of command templates.
const (
	PhMessage   = "{message}"
	PhSessionID = "{session_id}"
	PhTurn      = "{turn}"
	PhWorkspace = "{workspace}"
)

var placeholder = regexp.MustCompile(`\{[a-z_]+\}`)

// checkTemplate rejects placeholders it does not know (a typo would
// otherwise reach the program literally).
func checkTemplate(t []string) error {
	for _, arg := range t {
		for _, ph := range placeholder.FindAllString(arg, -1) {
			switch ph {
			case PhMessage, PhSessionID, PhTurn, PhWorkspace:
			default:
				return fmt.Errorf("harness.options: unknown placeholder %s in %q (have %s %s %s %s)",
					ph, arg, PhMessage, PhSessionID, PhTurn, PhWorkspace)
			}
		}
	}
	return nil
}

// usesSessionID reports whether the template needs a session id.
func usesSessionID(t []string) bool {
	for _, arg := range t {
		if strings.Contains(arg, PhSessionID) {
			return true
		}
	}
	return false
}

// vars are the values substituted into a template.
type vars struct {
	message, sessionID, workspace string
	turn                          int
}

// expand substitutes the placeholders in each argument of t. Each template
// argument stays exactly one argument, whatever the values hold (quotes,
// "$(...)", newlines, a leading "--"): no shell is involved, and the
// substitution is a single pass, so a value containing a placeholder is not
// expanded again.
func expand(t []string, v vars) []string {
	r := strings.NewReplacer(
		PhMessage, v.message,
		PhSessionID, v.sessionID,
		PhTurn, strconv.Itoa(v.turn),
		PhWorkspace, v.workspace,
	)
	out := make([]string, len(t))
	for i, arg := range t {
		out[i] = r.Replace(arg)
	}
	return out
}
