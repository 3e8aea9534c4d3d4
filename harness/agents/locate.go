package agents

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// DirEnvVar names the daemon variable giving the agents directory when no
// --agents-dir (ApplyOptions.Dir) is given.
const DirEnvVar = "HARNESSD_AGENTS_DIR"

// Install says where a preset's program was found.
type Install struct {
	// Path is the program's absolute path.
	Path string `json:"path"`
	// Source is "agents-dir" or "PATH".
	Source string `json:"source"`
	// Version is the npm package's version, read from its package.json;
	// empty when unknown.
	Version string `json:"version,omitempty"`
}

// Sources of an Install.
const (
	SourceAgentsDir = "agents-dir"
	SourcePATH      = "PATH"
)

// AgentsDir returns the configured agents directory: dir if not empty,
// else $HARNESSD_AGENTS_DIR.
func AgentsDir(dir string) string {
	if dir != "" {
		return dir
	}
	return os.Getenv(DirEnvVar)
}

// binDirs returns the directories an agents directory stands for: the
// directory itself and its node_modules/.bin.
func binDirs(dir string) []string {
	if dir == "" {
		return nil
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return []string{dir, filepath.Join(dir, "node_modules", ".bin")}
}

// Locate finds the preset's program: in the agents directory dir (see
// AgentsDir; a node_modules/.bin directory or one holding it), then on
// pathVar (a PATH value; "" means the daemon's PATH). It executes nothing.
func Locate(p *Preset, dir, pathVar string) (Install, bool) {
	for _, d := range binDirs(dir) {
		if path, ok := executable(filepath.Join(d, p.Program)); ok {
			return Install{Path: path, Source: SourceAgentsDir, Version: packageVersion(path, p.Package)}, true
		}
	}
	if pathVar == "" {
		pathVar = os.Getenv("PATH")
	}
	for _, d := range filepath.SplitList(pathVar) {
		if d == "" || !filepath.IsAbs(d) {
			continue // a relative PATH entry would depend on the episode's directory
		}
		if path, ok := executable(filepath.Join(d, p.Program)); ok {
			return Install{Path: path, Source: SourcePATH, Version: packageVersion(path, p.Package)}, true
		}
	}
	return Install{}, false
}

// executable reports whether path is an executable regular file (following
// symlinks) and returns it made absolute.
func executable(path string) (string, bool) {
	fi, err := os.Stat(path)
	if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", false
	}
	return abs, true
}

// packageVersion finds the package.json of npm package pkg above the real
// location of program and returns its version ("" if none is found).
func packageVersion(program, pkg string) string {
	if pkg == "" {
		return ""
	}
	real, err := filepath.EvalSymlinks(program)
	if err != nil {
		return ""
	}
	dir := filepath.Dir(real)
	for range 6 {
		b, err := os.ReadFile(filepath.Join(dir, "package.json"))
		if err == nil {
			var m struct{ Name, Version string }
			if json.Unmarshal(b, &m) == nil && m.Name == pkg {
				return m.Version
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return ""
}
