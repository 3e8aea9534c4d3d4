package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/internal/atif"
	"github.com/harnessd/harnessd/wire"
)

func init() {
	register("export", "convert an episode's record file to another format (ATIF trajectories)", runExport)
}

func runExport(args []string) int {
	c := newCLI("export", "harnessd export --format atif RECORD.jsonl [--export EXPORT.json] [-o FILE]\n\n"+
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
	f, err := os.Open(record)
	if err != nil {
		return c.fail(exitFailure, "%v", err)
	}
	recs, err := wire.ReadRecords(f)
	f.Close()
	if err != nil {
		return c.fail(exitFailure, "%s: %v", record, err)
	}
	ex, err := readExport(*exportFile, record)
	if err != nil {
		return c.fail(exitFailure, "%v", err)
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
		if _, err := os.Stdout.Write(b); err != nil {
			return c.fail(exitFailure, "%v", err)
		}
		return exitOK
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		return c.fail(exitFailure, "%v", err)
	}
	return exitOK
}

// readExport reads the training export named, else the one beside the
// record (a missing default is no export: an evaluation episode has none).
func readExport(name, record string) (*gateway.Export, error) {
	if name == "" {
		def := strings.TrimSuffix(record, ".jsonl") + ".export.json"
		if def == record {
			return nil, nil
		}
		if _, err := os.Stat(def); err != nil {
			return nil, nil
		}
		name = def
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("reading the export: %w", err)
	}
	var ex gateway.Export
	if err := json.Unmarshal(b, &ex); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if ex.Format != gateway.ExportFormat {
		return nil, fmt.Errorf("%s: format %q, not the gateway's training export (%s)", name, ex.Format, gateway.ExportFormat)
	}
	return &ex, nil
}
