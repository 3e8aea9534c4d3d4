package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/harnessd/harnessd/internal/units"
)

// cli is one subcommand's command line, parsed the way kubectl, helm and
// etcd parse theirs (spf13/pflag): GNU-style --flag and --flag=value,
// -h/--help printing the usage to stdout with exit 0, and a usage error as
// one line naming the command, a hint to run --help, and exit 2. The
// single-dash spelling of Go's flag package (-listen) is still accepted for
// every long flag, so older scripts keep working.
type cli struct {
	name  string // subcommand, as in "harnessd NAME"
	about string // synopsis line(s) and description, before the flags
	fs    *pflag.FlagSet
}

// newCLI returns the command line of subcommand name. about is its usage
// text without the flag list: "harnessd NAME [flags] ...\n\ndescription".
func newCLI(name, about string) *cli {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SortFlags = false
	fs.SetOutput(io.Discard) // parse reports errors itself, in one line
	fs.Usage = func() {}
	return &cli{name: name, about: about, fs: fs}
}

// writeUsage prints the usage text and the flag list.
func (c *cli) writeUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage:\n  %s\n", strings.TrimRight(c.about, "\n"))
	if c.fs.HasAvailableFlags() {
		fmt.Fprintf(w, "\nFlags:\n%s", c.fs.FlagUsages())
	}
}

// parse parses args. When it returns done, the command must exit with code:
// exitOK after printing the help to stdout, exitUsage after a one-line
// error on stderr.
func (c *cli) parse(args []string) (code int, done bool) {
	err := c.fs.Parse(goStyleFlags(c.fs, args))
	switch {
	case err == nil:
		return exitOK, false
	case errors.Is(err, pflag.ErrHelp):
		c.writeUsage(os.Stdout)
		return exitOK, true
	default:
		return c.usageError("%v", err), true
	}
}

// usageError prints "harnessd NAME: message" and the --help hint on stderr
// and returns exitUsage.
func (c *cli) usageError(format string, a ...any) int {
	fmt.Fprintf(os.Stderr, "harnessd %s: %s\nRun 'harnessd %s --help' for usage.\n", c.name, fmt.Sprintf(format, a...), c.name)
	return exitUsage
}

// fail prints "harnessd NAME: message" on stderr and returns code.
func (c *cli) fail(code int, format string, a ...any) int {
	fmt.Fprintf(os.Stderr, "harnessd %s: %s\n", c.name, fmt.Sprintf(format, a...))
	return code
}

// noArgs reports a usage error when positional arguments were given.
func (c *cli) noArgs() (code int, done bool) {
	if c.fs.NArg() > 0 {
		return c.usageError("unexpected argument %q", c.fs.Arg(0)), true
	}
	return exitOK, false
}

// harnessArgs is the harness command given on the command line: the
// positional arguments, written after "--" or without one ("serve ./agent
// -x --": the harness's own "--"). A first word that is no program,
// followed later by "--", is a usage error naming it: it is most often a
// flag's value written with a space ("--turn-timeout 10 minutes --
// ./agent"), which was taken as the harness program.
func (c *cli) harnessArgs() ([]string, error) {
	args := c.fs.Args()
	if c.fs.ArgsLenAtDash() > 0 {
		// Flags interspersed: pflag consumed the "--".
		return args, strayBeforeDash(args[0])
	}
	if c.fs.ArgsLenAtDash() < 0 && slices.Index(args, "--") > 0 && !strings.Contains(args[0], "/") {
		if _, err := exec.LookPath(args[0]); err != nil {
			return args, strayBeforeDash(args[0])
		}
	}
	return args, nil
}

// strayBeforeDash is the usage error for word, found before "--".
func strayBeforeDash(word string) error {
	return fmt.Errorf("unexpected argument %q before \"--\" (the harness command goes after \"--\"; a flag's value with a space in it needs quotes)", word)
}

// goStyleFlags rewrites the single-dash long flags of Go's flag package
// (-listen ADDR, -max-turns=3) as pflag's --listen, --max-turns=3. Only
// names of registered long flags longer than one letter are rewritten, so
// shorthands (-m, -h) and values are left alone; the value of a flag that
// takes one is skipped, and nothing after "--" is touched.
func goStyleFlags(fs *pflag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		name, hasValue := "", false
		switch {
		case strings.HasPrefix(a, "--"):
			name, _, hasValue = strings.Cut(a[2:], "=")
		case strings.HasPrefix(a, "-") && len(a) > 2:
			n, _, eq := strings.Cut(a[1:], "=")
			if f := fs.Lookup(n); f != nil && len(n) > 1 {
				a, name, hasValue = "-"+a, n, eq
			}
		case strings.HasPrefix(a, "-") && len(a) == 2:
			if f := fs.ShorthandLookup(a[1:]); f != nil && f.NoOptDefVal == "" {
				out = append(out, a)
				if i+1 < len(args) {
					i++
					out = append(out, args[i])
				}
				continue
			}
		}
		out = append(out, a)
		if f := fs.Lookup(name); name != "" && f != nil && !hasValue && f.NoOptDefVal == "" && i+1 < len(args) {
			i++
			out = append(out, args[i])
		}
	}
	return out
}

// durationFlag is a duration flag kept as text ("90s", "1.5m" or bare
// seconds, as configuration files take it) and checked when set; its type
// shows as "duration" in the help.
type durationFlag struct{ p *string }

func (d durationFlag) String() string { return *d.p }
func (d durationFlag) Type() string   { return "duration" }
func (d durationFlag) Set(v string) error {
	if _, err := units.ParseDuration(v); err != nil {
		return err
	}
	*d.p = v
	return nil
}

// sizeFlag is a byte-size flag kept as text ("64MiB", "1e6") and checked
// when set; its type shows as "size" in the help.
type sizeFlag struct{ p *string }

func (s sizeFlag) String() string { return *s.p }
func (s sizeFlag) Type() string   { return "size" }
func (s sizeFlag) Set(v string) error {
	if _, err := units.ParseByteSize(v); err != nil {
		return err
	}
	*s.p = v
	return nil
}

// durationVar registers a durationFlag.
func durationVar(fs *pflag.FlagSet, p *string, name, value, usage string) {
	*p = value
	fs.Var(durationFlag{p}, name, usage)
}

// sizeVar registers a sizeFlag.
func sizeVar(fs *pflag.FlagSet, p *string, name, value, usage string) {
	*p = value
	fs.Var(sizeFlag{p}, name, usage)
}

// choiceFlag is a flag whose value is one of a few words, checked when
// set: a bad one is a usage error naming the flag and the words (exit 2),
// not a failure found after the daemon's setup began.
type choiceFlag struct {
	p       *string
	choices []string
}

func (c choiceFlag) String() string { return *c.p }
func (c choiceFlag) Type() string   { return "string" }
func (c choiceFlag) Set(v string) error {
	w := strings.ToLower(strings.TrimSpace(v))
	if w == "" {
		return nil // the default, as an empty value always was
	}
	if !slices.Contains(c.choices, w) {
		return fmt.Errorf("want %s", strings.Join(c.choices, ", "))
	}
	*c.p = w
	return nil
}

// choiceVar registers a choiceFlag whose default is def.
func choiceVar(fs *pflag.FlagSet, p *string, name, def string, choices []string, usage string) {
	*p = def
	fs.Var(choiceFlag{p, choices}, name, usage)
}
