package sandbox

import (
	"cmp"
	"path/filepath"
	"sort"
	"strings"
)

// initSpec is what the host sends the init: everything but the command.
type initSpec struct {
	Name     string `json:"name"`
	Hostname string `json:"hostname"`
	Doors    []Door `json:"doors,omitempty"`
	// HostNetwork: the sandbox shares the host's network namespace.
	HostNetwork bool     `json:"host_network,omitempty"`
	Mounts      mountSet `json:"mounts"`
	UID         int      `json:"uid"`
	GID         int      `json:"gid"`
	// SetGroups is false with the single id map (setgroups is denied).
	SetGroups bool `json:"setgroups"`
	Seccomp   bool `json:"seccomp"`
	TTY       bool `json:"tty,omitempty"`
	// DefaultDir is the harness's directory when its Command names none.
	DefaultDir string `json:"default_dir"`
}

// mountSet is the new root's layout.
type mountSet struct {
	Hide  []string   `json:"hide,omitempty"`
	Binds []bindSpec `json:"binds,omitempty"`
	// Storage has the defaults filled in.
	Storage Storage `json:"storage"`
	// Keep lists host files kept visible when a hidden socket directory
	// holds their target (keptThrough).
	Keep []string `json:"keep,omitempty"`
}

// bindSpec is a Bind whose source the daemon opened (O_PATH) and passed as
// descriptor FD: the init, an unprivileged root of its user namespace,
// cannot walk the daemon's private directories to reach it.
type bindSpec struct {
	Bind
	FD int `json:"fd"`
}

func (c *Config) initSpec(ids idPlan) initSpec {
	s := initSpec{
		Name: c.Name, Hostname: c.Hostname, Doors: c.Doors, HostNetwork: c.HostNetwork,
		UID: ids.uid, GID: ids.gid, SetGroups: ids.setgroups,
		Seccomp: c.Seccomp, TTY: c.TTY, DefaultDir: "/",
	}
	if s.Hostname == "" {
		s.Hostname = "sandbox"
	}
	s.Mounts.Hide = append(s.Mounts.Hide, c.Hide...)
	s.Mounts.Storage = c.Storage.resolved(c.Limits)
	s.Mounts.Keep = append(s.Mounts.Keep, keptThrough...)
	if c.Workspace != "" {
		s.DefaultDir = cmp.Or(c.WorkspaceDst, c.Workspace)
		if c.WorkspaceAt != "" {
			s.DefaultDir = c.WorkspaceAt
		}
	}
	return s
}

// binds lists every bind of c: workspace (and at WorkspaceAt), HOME,
// extras, parents before children (a read-only bind of a directory never
// covers a writable one inside it), otherwise in that order.
func (c *Config) binds() []Bind {
	out := c.allBinds()
	sort.SliceStable(out, func(i, j int) bool { return depth(out[i].dst()) < depth(out[j].dst()) })
	return out
}

func depth(p string) int { return strings.Count(filepath.Clean(p), "/") }

func (b Bind) dst() string {
	if b.Dst != "" {
		return b.Dst
	}
	return b.Src
}

func (c *Config) allBinds() []Bind {
	var out []Bind
	if c.Workspace != "" {
		out = append(out, Bind{Src: c.Workspace, Dst: c.WorkspaceDst, Writable: true})
		if c.WorkspaceAt != "" {
			out = append(out, Bind{Src: c.Workspace, Dst: c.WorkspaceAt, Writable: true})
		}
	}
	if c.Home != "" {
		out = append(out, Bind{Src: c.Home, Dst: c.HomeDst, Writable: true})
	}
	return append(out, c.Binds...)
}
