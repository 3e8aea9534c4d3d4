package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/harnessd/harnessd/testharness/mcptools"
)

func init() {
	register("tools", "a stdio MCP tool server (add, echo, read_file, slow, crash, fancy, grade, count, stats)", runTools)
}

func runTools(args []string) int {
	fs := flag.NewFlagSet("tools", flag.ContinueOnError)
	var o mcptools.Options
	only := fs.String("only", "", "comma-separated tools to serve (default: all)")
	omit := fs.String("omit", "", "comma-separated tools not to serve")
	rename := fs.String("rename", "", "comma-separated OLD=NEW pairs: serve tool OLD as NEW")
	fs.StringVar(&o.Name, "name", mcptools.DefaultName, "server name announced to clients")
	fs.IntVar(&o.PageSize, "page-size", 0, "tools per tools/list page (0: one page)")
	fs.Float64Var(&o.Score, "score", 1, "score grade reports when given no expected answer")
	stderr := fs.String("stderr", "", "write this line to stderr at start")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o.Only, o.Omit = splitList(*only), splitList(*omit)
	if *rename != "" {
		o.Rename = map[string]string{}
		for _, pair := range splitList(*rename) {
			old, nu, ok := strings.Cut(pair, "=")
			if !ok || old == "" || nu == "" {
				fmt.Fprintf(os.Stderr, "testharness tools: bad --rename pair %q (want OLD=NEW)\n", pair)
				return 2
			}
			o.Rename[old] = nu
		}
	}
	if *stderr != "" {
		fmt.Fprintln(os.Stderr, *stderr)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := mcptools.Serve(ctx, o, os.Stdin, os.Stdout); err != nil && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "testharness tools: %v\n", err)
		return 1
	}
	return 0
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
