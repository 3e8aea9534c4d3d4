package tasks

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/harnessd/harnessd/process/sandbox"
)

// User is a task's [agent] user or [verifier] user (Harbor: "Username or
// UID to run the agent as"). harnessd maps it onto the sandbox's ids: with
// a private id range (a root daemon) the sandbox has the ids 0–65535 and
// the user gets one of them, named in the sandbox's /etc/passwd; with the
// single id map (an unprivileged daemon) only root exists inside, and any
// other user is refused when the run starts.
type User struct {
	// Name is the user's name ("" when the task gave a uid).
	Name string `json:"name,omitempty"`
	// UID is the id inside the sandbox.
	UID int `json:"uid"`
}

// Root reports whether u is the sandbox's root (nil means root: Harbor's
// default, the image's USER, is root for the images harnessd stands for).
func (u *User) Root() bool { return u == nil || u.UID == 0 }

// String names u for messages.
func (u *User) String() string {
	switch {
	case u == nil:
		return "root"
	case u.Name != "":
		return u.Name
	}
	return strconv.Itoa(u.UID)
}

// home is u's HOME inside.
func (u *User) home() string {
	if u.Root() {
		return "/root"
	}
	if u.Name != "" {
		return "/home/" + u.Name
	}
	return fmt.Sprintf("/home/%d", u.UID)
}

// userName is a POSIX-ish user name.
var userName = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)

// firstTaskUID is the first id handed to a named user of the task that is
// not a system user of the host.
const firstTaskUID = 1000

// maxTaskUID keeps task users inside the sandbox's range, below nobody.
const maxTaskUID = 65533

// parseUser reads a user value (a name or a uid, as TOML gives it).
func parseUser(key string, v any) (*User, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case int64:
		if x < 0 || x > maxTaskUID {
			return nil, fmt.Errorf("%s %d: a uid from 0 to %d", key, x, maxTaskUID)
		}
		return &User{UID: int(x)}, nil
	case string:
		if n, err := strconv.Atoi(x); err == nil {
			return parseUser(key, int64(n))
		}
		if x == "root" {
			return &User{Name: "root"}, nil
		}
		if !userName.MatchString(x) {
			return nil, fmt.Errorf("%s %q: not a user name", key, x)
		}
		return &User{Name: x, UID: -1}, nil
	}
	return nil, fmt.Errorf("%s: want a user name or a uid, not %T", key, v)
}

// loadUsers reads [agent] user and [verifier] user (steps' users come
// with the steps); assignIDs gives each named user its id.
func (t *Task) loadUsers(cfg taskTOML) []error {
	var errs []error
	var err error
	if t.AgentUser, err = parseUser("agent.user", cfg.Agent.User); err != nil {
		errs = append(errs, err)
	}
	if t.VerifierUser, err = parseUser("verifier.user", cfg.Verifier.User); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// assignIDs gives every named user of the task an id: root 0, a system
// user of the host (below 1000 in its /etc/passwd) its host id, any other
// name the next free id from 1000 in order of appearance ([agent], then
// [verifier], then the steps'). The same name always gets the same id.
func (t *Task) assignIDs() error {
	host := hostUsers()
	taken := map[int]string{}
	for _, u := range t.users() {
		if u.Name == "" {
			taken[u.UID] = ""
		}
	}
	byName := map[string]int{"root": 0}
	next := firstTaskUID
	for _, u := range t.users() {
		if u.Name == "" {
			continue
		}
		if id, ok := byName[u.Name]; ok {
			u.UID = id
			continue
		}
		if id, ok := host[u.Name]; ok && id < firstTaskUID {
			u.UID = id
		} else {
			for _, used := taken[next]; used; _, used = taken[next] {
				next++
			}
			if next > maxTaskUID {
				return errors.New("too many task users")
			}
			u.UID = next
			next++
		}
		byName[u.Name] = u.UID
		taken[u.UID] = u.Name
	}
	return nil
}

// users are the task's users, nil ones left out.
func (t *Task) users() []*User {
	var out []*User
	for _, u := range []*User{t.AgentUser, t.VerifierUser} {
		if u != nil {
			out = append(out, u)
		}
	}
	for i := range t.Steps {
		for _, u := range []*User{t.Steps[i].AgentUser, t.Steps[i].VerifierUser} {
			if u != nil {
				out = append(out, u)
			}
		}
	}
	return out
}

// hostUsers reads the host's /etc/passwd names and ids.
func hostUsers() map[string]int {
	out := map[string]int{}
	f, err := os.Open("/etc/passwd")
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Split(sc.Text(), ":")
		if len(fs) < 3 {
			continue
		}
		if id, err := strconv.Atoi(fs[2]); err == nil {
			out[fs[0]] = id
		}
	}
	return out
}

// canHonour reports why u cannot be the user of a sandbox on this host
// (key names the task.toml key): only a root daemon maps a range of ids.
func canHonour(key string, u *User) error {
	if u.Root() || os.Geteuid() == 0 {
		return nil
	}
	return fmt.Errorf("task.toml %s = %q cannot be honoured here: an unprivileged daemon's sandbox maps one id (root inside); run harnessd as root for a range of ids", key, u.String())
}

// identityFiles writes the sandbox's /etc/passwd and /etc/group into dir:
// the host's system entries (ids below 1000, and nobody) with the task's
// users added, so that whoami, id and ls -l name them. It returns the
// binds that put them in place (none when the task names no user).
func (t *Task) identityFiles(dir string) ([]sandbox.Bind, error) {
	us := t.users()
	if len(us) == 0 {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("task %s: users: %w", t.ID, err)
	}
	var binds []sandbox.Bind
	for _, f := range []struct{ name, format string }{
		{"passwd", "%[1]s:x:%[2]d:%[2]d::%[3]s:/bin/bash\n"},
		{"group", "%[1]s:x:%[2]d:\n"},
	} {
		var b strings.Builder
		have := map[string]bool{}
		if data, err := os.ReadFile("/etc/" + f.name); err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				fs := strings.Split(line, ":")
				if len(fs) < 3 {
					continue
				}
				id, err := strconv.Atoi(fs[2])
				if err != nil || (id >= firstTaskUID && id != 65534) {
					continue
				}
				have[fs[0]] = true
				b.WriteString(line + "\n")
			}
		}
		for _, u := range us {
			name := u.Name
			if name == "" {
				continue // a bare uid has no name, as in a container
			}
			if have[name] {
				continue
			}
			have[name] = true
			fmt.Fprintf(&b, f.format, name, u.UID, u.home())
		}
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			return nil, fmt.Errorf("task %s: users: %w", t.ID, err)
		}
		binds = append(binds, sandbox.Bind{Src: p, Dst: "/etc/" + f.name})
	}
	return binds, nil
}

// AgentIdentity is what a harness sandbox needs to run as the task's
// [agent] user: its id inside (nil: the sandbox's default) and the binds
// of /etc/passwd and /etc/group naming it, written into dir. It fails,
// naming the key, when this host cannot honour the user.
func (t *Task) AgentIdentity(dir string) (*int, []sandbox.Bind, error) {
	if t.AgentUser == nil {
		return nil, nil, nil
	}
	if err := canHonour("agent.user", t.AgentUser); err != nil {
		return nil, nil, err
	}
	binds, err := t.identityFiles(dir)
	if err != nil {
		return nil, nil, err
	}
	uid := t.AgentUser.UID
	return &uid, binds, nil
}
