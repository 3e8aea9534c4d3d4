package tasks

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// copyOp is one COPY/ADD source placed at an absolute path inside.
type copyOp struct {
	src   string // host path, inside the build context
	dst   string // absolute path inside (a directory when intoDir)
	isDir bool   // src is a directory: its contents go into dst
	// intoDir: dst is a directory and src keeps its base name in it.
	intoDir bool
	// context is the build context src must resolve within ("": a JSONL
	// task's dir, which names a host directory).
	context string
}

// dockerfile is what the honoured subset of a Dockerfile says.
type dockerfile struct {
	workDir  string // the last WORKDIR ("" when none)
	env      []string
	copies   []copyOp
	warnings []string
}

// maxDockerfileBytes bounds a Dockerfile read at load time.
const maxDockerfileBytes = 1 << 20

// parseDockerfile reads the Dockerfile at file of the task directory
// taskDir (readTaskFile), whose build context is dir. Honoured: WORKDIR, ENV, ARG (defaults, for substitution), COPY and
// ADD of local paths; of a multi-stage file only the last stage counts.
// Everything else (RUN, FROM's image, CMD, USER, ...) is ignored and
// counted in the warnings. A problem that makes the environment wrong (a
// source missing or outside the context) is an error.
func parseDockerfile(taskDir, file, dir string) (*dockerfile, error) {
	b, err := readTaskFile(taskDir, file, maxDockerfileBytes)
	if err != nil {
		return nil, err
	}
	d := &dockerfile{}
	vars := map[string]string{}
	envIdx := map[string]int{}
	ignored := map[string]int{}
	cwd := "/"
	dirs := map[string]bool{"/": true}
	for _, ins := range dockerInstructions(string(b)) {
		kw, rest := ins.keyword, ins.rest
		switch kw {
		case "FROM":
			// A new stage: what an earlier one set does not carry over.
			*d = dockerfile{warnings: d.warnings}
			vars, envIdx, cwd, dirs = map[string]string{}, map[string]int{}, "/", map[string]bool{"/": true}
			ignored["FROM"]++
		case "ARG":
			for _, a := range strings.Fields(rest) {
				k, v, _ := strings.Cut(a, "=")
				if _, set := vars[k]; !set {
					vars[k] = unquote(v)
				}
			}
		case "ENV":
			kvs, err := parseEnv(rest)
			if err != nil {
				return nil, fmt.Errorf("line %d: ENV: %w", ins.line, err)
			}
			for _, kv := range kvs {
				v := expand(kv[1], vars)
				vars[kv[0]] = v
				if i, ok := envIdx[kv[0]]; ok {
					d.env[i] = kv[0] + "=" + v
				} else {
					envIdx[kv[0]] = len(d.env)
					d.env = append(d.env, kv[0]+"="+v)
				}
			}
		case "WORKDIR":
			w := expand(unquote(strings.TrimSpace(rest)), vars)
			if w == "" {
				return nil, fmt.Errorf("line %d: WORKDIR without a path", ins.line)
			}
			if !path.IsAbs(w) {
				w = path.Join(cwd, w)
			}
			cwd = path.Clean(w)
			d.workDir = cwd
			dirs[cwd] = true
		case "COPY", "ADD":
			ops, warn, err := parseCopy(kw, rest, dir, cwd, vars, dirs)
			if err != nil {
				return nil, fmt.Errorf("line %d: %s: %w", ins.line, kw, err)
			}
			d.warnings = append(d.warnings, warn...)
			d.copies = append(d.copies, ops...)
		default:
			ignored[kw]++
		}
	}
	var kws []string
	for k := range ignored {
		kws = append(kws, k)
	}
	sort.Strings(kws)
	for _, k := range kws {
		d.warnings = append(d.warnings, fmt.Sprintf("Dockerfile %s ignored (%d×): the host or container image must provide what it would set up", k, ignored[k]))
	}
	return d, nil
}

type dockerInstruction struct {
	line    int
	keyword string
	rest    string
}

// dockerInstructions splits a Dockerfile into instructions: comments and
// blank lines dropped, lines ending in a backslash joined.
func dockerInstructions(s string) []dockerInstruction {
	var out []dockerInstruction
	var cur strings.Builder
	start := 0
	for i, line := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "#") || (t == "" && cur.Len() == 0) {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if strings.HasSuffix(t, "\\") {
			cur.WriteString(strings.TrimSuffix(t, "\\"))
			cur.WriteByte(' ')
			continue
		}
		cur.WriteString(t)
		full := strings.TrimSpace(cur.String())
		cur.Reset()
		if full == "" {
			continue
		}
		kw, rest, _ := strings.Cut(full, " ")
		out = append(out, dockerInstruction{line: start, keyword: strings.ToUpper(kw), rest: strings.TrimSpace(rest)})
	}
	if t := strings.TrimSpace(cur.String()); t != "" {
		kw, rest, _ := strings.Cut(t, " ")
		out = append(out, dockerInstruction{line: start, keyword: strings.ToUpper(kw), rest: strings.TrimSpace(rest)})
	}
	return out
}

// parseEnv reads ENV's KEY=VALUE pairs (values may be quoted) or the
// legacy "ENV KEY VALUE".
func parseEnv(rest string) ([][2]string, error) {
	words, err := splitWords(rest)
	if err != nil {
		return nil, err
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("no variable")
	}
	if !strings.Contains(words[0], "=") {
		k, v, _ := strings.Cut(strings.TrimSpace(rest), " ")
		return [][2]string{{k, unquote(strings.TrimSpace(v))}}, validEnvKey(k)
	}
	var out [][2]string
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			return nil, fmt.Errorf("%q is not KEY=VALUE", w)
		}
		if err := validEnvKey(k); err != nil {
			return nil, err
		}
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

func validEnvKey(k string) error {
	if k == "" || strings.ContainsAny(k, "=\x00 \t") {
		return fmt.Errorf("bad variable name %q", k)
	}
	return nil
}

// splitWords splits at unquoted blanks, removing quotes and backslash
// escapes.
func splitWords(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in := false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' && i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			} else {
				cur.WriteByte(c)
			}
		case c == '"' || c == '\'':
			quote, in = c, true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			in = true
		case c == ' ' || c == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote")
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}

// expand substitutes $VAR and ${VAR} (and ${VAR:-default}) from vars.
func expand(s string, vars map[string]string) string {
	return os.Expand(s, func(k string) string {
		if name, def, ok := strings.Cut(k, ":-"); ok {
			if v := vars[name]; v != "" {
				return v
			}
			return def
		}
		return vars[k]
	})
}

// parseCopy turns one COPY/ADD into copy operations. cwd is the WORKDIR
// at that point; dirs are the paths known to be directories.
func parseCopy(kw, rest, contextDir, cwd string, vars map[string]string, dirs map[string]bool) ([]copyOp, []string, error) {
	var args []string
	if strings.HasPrefix(rest, "[") {
		if err := json.Unmarshal([]byte(rest), &args); err != nil {
			return nil, nil, fmt.Errorf("bad JSON form: %w", err)
		}
	} else {
		w, err := splitWords(rest)
		if err != nil {
			return nil, nil, err
		}
		args = w
	}
	var warnings []string
	for len(args) > 0 && strings.HasPrefix(args[0], "--") {
		flag := args[0]
		args = args[1:]
		switch {
		case strings.HasPrefix(flag, "--from"):
			return nil, []string{fmt.Sprintf("%s %s ignored: files of another stage or image cannot be copied", kw, flag)}, nil
		case strings.HasPrefix(flag, "--chown"), strings.HasPrefix(flag, "--chmod"):
			warnings = append(warnings, fmt.Sprintf("%s %s ignored: files keep their own modes, the workspace belongs to the harness", kw, flag))
		}
	}
	if len(args) < 2 {
		return nil, nil, fmt.Errorf("want at least one source and a destination")
	}
	for i := range args {
		args[i] = expand(args[i], vars)
	}
	srcs, dst := args[:len(args)-1], args[len(args)-1]
	intoDir := strings.HasSuffix(dst, "/") || len(srcs) > 1 || dst == "."
	if !path.IsAbs(dst) {
		dst = path.Join(cwd, dst)
	}
	dst = path.Clean(dst)
	if dirs[dst] {
		intoDir = true
	}
	var ops []copyOp
	for _, src := range srcs {
		if strings.Contains(src, "://") || strings.HasPrefix(src, "git@") {
			warnings = append(warnings, fmt.Sprintf("%s %s ignored: only local files are copied", kw, src))
			continue
		}
		clean := path.Clean("/" + src)[1:]
		if clean == "" {
			clean = "."
		}
		if strings.HasPrefix(path.Clean(src), "..") {
			return nil, nil, fmt.Errorf("source %q is outside the build context", src)
		}
		matches, err := filepath.Glob(filepath.Join(contextDir, filepath.FromSlash(clean)))
		if err != nil {
			return nil, nil, fmt.Errorf("source %q: %w", src, err)
		}
		if len(matches) == 0 {
			return nil, nil, fmt.Errorf("source %q does not exist in environment/", src)
		}
		if len(matches) > 1 {
			intoDir = true
		}
		for _, m := range matches {
			if err := beneathDir(contextDir, m); err != nil {
				return nil, nil, fmt.Errorf("source %q is outside the build context: %w", src, err)
			}
			fi, err := os.Stat(m)
			if err != nil {
				return nil, nil, fmt.Errorf("source %q: %w", src, err)
			}
			if kw == "ADD" && !fi.IsDir() && isArchive(m) {
				warnings = append(warnings, fmt.Sprintf("ADD %s: the archive is copied as it is, not extracted", src))
			}
			ops = append(ops, copyOp{src: m, dst: dst, isDir: fi.IsDir(), intoDir: intoDir && !fi.IsDir(), context: contextDir})
		}
	}
	if intoDir || (len(ops) > 0 && ops[0].isDir) {
		dirs[dst] = true
	}
	return ops, warnings, nil
}

func isArchive(p string) bool {
	for _, s := range []string{".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz"} {
		if strings.HasSuffix(p, s) {
			return true
		}
	}
	return false
}
