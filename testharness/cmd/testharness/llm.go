package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/harnessd/harnessd/testharness/fakellm"
)

func init() {
	register("llm", "a scriptable fake LLM server (Anthropic, OpenAI chat/Responses, Gemini)", runLLM)
}

func runLLM(args []string) int {
	fs := flag.NewFlagSet("llm", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	scriptPath := fs.String("script", "", "JSON script file (default: the built-in behaviour)")
	addrFile := fs.String("addr-file", "", "also write the base URL to this file")
	quiet := fs.Bool("quiet", false, "do not log requests to stderr")
	engine := fs.Bool("engine", false, "answer Chat Completions as a vLLM/SGLang engine does: token ids and logprobs when asked (for harnessd --model-upstream engine)")
	tokensAsText := fs.Bool("engine-tokens-as-text", false, "with --engine: logprob tokens as text, as vLLM without --return-tokens-as-token-ids")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "testharness llm: unexpected arguments %q\n", fs.Args())
		return 2
	}
	opts := fakellm.Options{Engine: *engine, EngineTokensAsText: *tokensAsText}
	if *scriptPath != "" {
		sc, err := fakellm.LoadScript(*scriptPath)
		if err != nil {
			fmt.Fprintf(os.Stderr, "testharness llm: %v\n", err)
			return 2
		}
		opts.Script = sc
	}
	if !*quiet {
		opts.Logf = log.New(os.Stderr, "", log.LstdFlags|log.Lmicroseconds).Printf
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	srv := fakellm.New(opts)
	url, err := srv.Start(*addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testharness llm: %v\n", err)
		return 1
	}
	defer srv.Close()
	if *addrFile != "" {
		if err := writeFileAtomic(*addrFile, []byte(url+"\n")); err != nil {
			fmt.Fprintf(os.Stderr, "testharness llm: %v\n", err)
			return 1
		}
	}
	fmt.Printf("LISTENING %s\n", url)
	<-ctx.Done()
	if err := srv.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "testharness llm: %v\n", err)
		return 1
	}
	return 0
}

// writeFileAtomic writes data to path through a temporary file and a
// rename, so a reader never sees a partial address.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".addr-*")
	if err != nil {
		return fmt.Errorf("addr-file: %w", err)
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("addr-file: %w", err)
	}
	return nil
}
