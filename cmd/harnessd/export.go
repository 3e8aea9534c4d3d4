package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/harnessd/harnessd/internal/atif"
	"github.com/harnessd/harnessd/wire"
)

func init() {
	register("export", "convert an episode's record file to another format (ATIF trajectories)", runExport)
}

func runExport(args []string) int {
	c := newCLI("export", "harnessd export --format atif RECORD.jsonl [--export EXPORT.json] [--attempt N] [-o FILE]\n\n"+
		"Converts one episode's record file (record_dir's <episode>.jsonl) into a trajectory in Harbor's\n"+
		"Agent Trajectory Interchange Format ("+atif.SchemaVersion+"): a user step per turn message, an agent step per\n"+
		"model call the gateway saw, the tool bridge's tool calls and results, token counts, and the engine's\n"+
		"token ids and logprobs. --export adds the gateway's training export (<episode>.export.json; by\n"+
		"default the one beside the record, when there is one) for token ids the record lacks, and rewards.\n"+
		"The trajectory is printed on stdout, or written to -o FILE. docs/protocol.md#atif-trajectories.")
	format := c.fs.String("format", "", "output format: atif")
	exportFile := c.fs.String("export", "", "the gateway's training export (default: RECORD's .export.json, if present)")
	out := c.fs.StringP("output", "o", "", "write the trajectory to this file (default stdout)")
	agentVersion := c.fs.String("agent-version", "", "the agent's version for the trajectory (default \"unknown\")")
	attempt := c.fs.Int("attempt", 0, "the episode to convert, from 1, when the record holds several (an id reused)")
	if code, done := c.parse(args); done {
		return code
	}
	if *format != "atif" {
		if *format == "" {
			return c.usageError("--format is required (atif)")
		}
		return c.usageError("unknown --format %q (atif)", *format)
	}
	if c.fs.NArg() != 1 {
		return c.usageError("one record file is needed, got %d arguments", c.fs.NArg())
	}
	record := c.fs.Arg(0)
	recs, ex, err := atif.ReadFiles(record, *exportFile)
	var cut *wire.CutError
	switch {
	case errors.As(err, &cut):
		// The records before the cut line are whole: convert them.
		fmt.Fprintf(os.Stderr, "harnessd export: note: %v\n", err)
	case err != nil:
		return c.fail(exitFailure, "%v", err)
	}
	if eps := atif.Episodes(recs); *attempt > 0 && *attempt <= len(eps) {
		if recs = eps[*attempt-1]; *exportFile == "" && *attempt < len(eps) {
			ex = nil // the export beside the record is the last episode's
		}
	} else if *attempt != 0 || len(eps) > 1 {
		return c.fail(exitFailure, "%s holds %d episodes: pick one with --attempt 1 to %d", record, len(eps), len(eps))
	}
	t, err := atif.Convert(recs, ex, atif.Options{AgentVersion: *agentVersion, HarnessdVersion: buildVersion()})
	if err != nil {
		return c.fail(exitFailure, "%s: %v", record, err)
	}
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return c.fail(exitFailure, "encoding the trajectory: %v", err)
	}
	b = append(b, '\n')
	if *out == "" {
		_, err = os.Stdout.Write(b)
	} else {
		err = os.WriteFile(*out, b, 0o644)
	}
	if err != nil {
		return c.fail(exitFailure, "%v", err)
	}
	return exitOK
}
