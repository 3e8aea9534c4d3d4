// Command benchsummary prints the summary table of `make bench`: it reads
// the benchmarks' output (bin/bench.txt, or the files named on the command
// line) and prints every summary row (internal/benchrow: what, harnessd,
// floor, ratio, target, verdict, tab-separated, written by the benchmarks)
// as one Markdown table, in the order they were written. It owns nothing
// but that formatting and changes no file.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/harnessd/harnessd/internal/benchrow"
)

func main() {
	files := os.Args[1:]
	if len(files) == 0 {
		files = []string{"bin/bench.txt"}
	}
	var rows [][]string
	for _, name := range files {
		r, err := readRows(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchsummary:", err)
			os.Exit(1)
		}
		rows = append(rows, r...)
	}
	if len(rows) == 0 {
		fmt.Fprintln(os.Stderr, "benchsummary: no BENCHROW lines in", strings.Join(files, ", "))
		os.Exit(1)
	}
	write(os.Stdout, rows)
}

// readRows returns the BENCHROW lines of a file, split into columns; a row
// with too few columns is padded, one with too many keeps its extra text in
// the last column.
func readRows(name string) ([][]string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	defer f.Close()
	var rows [][]string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), benchrow.Prefix)
		if !ok {
			continue
		}
		cols := strings.SplitN(rest, "\t", len(benchrow.Columns))
		for len(cols) < len(benchrow.Columns) {
			cols = append(cols, "—")
		}
		rows = append(rows, cols)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return rows, nil
}

// write prints rows as a Markdown table; verdicts of met and missed are
// set in bold.
func write(w io.Writer, rows [][]string) {
	fmt.Fprintln(w, "| "+strings.Join(benchrow.Columns, " | ")+" |")
	fmt.Fprintln(w, strings.Repeat("| --- ", len(benchrow.Columns))+"|")
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			c = strings.ReplaceAll(c, "|", "\\|")
			if i == len(r)-1 && (c == benchrow.Met || c == benchrow.Missed) {
				c = "**" + c + "**"
			}
			cells[i] = c
		}
		fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" |")
	}
}
