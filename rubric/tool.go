package rubric

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

func (s *Set) runTool(ctx context.Context, sp *Spec, in Input) (float64, string, error) {
	ctx, cancel := context.WithTimeout(ctx, sp.Timeout.D())
	defer cancel()
	args := expandArgs(sp.Arguments, in)
	raw, err := json.Marshal(args)
	if err != nil {
		return 0, "", fmt.Errorf("arguments: %w", err)
	}
	text, err := s.deps.CallTool(ctx, sp.Tool, raw)
	if err != nil {
		return 0, tail(text), fmt.Errorf("tool %s: %w", sp.Tool, err)
	}
	f, ok := parseScore(text)
	if !ok {
		return 0, tail(text), fmt.Errorf("tool %s returned no score: %s", sp.Tool, tail(text))
	}
	return f, tail(text), nil
}

// expandArgs replaces {{placeholders}} in string values, recursively.
func expandArgs(v any, in Input) any {
	switch t := v.(type) {
	case string:
		return strings.NewReplacer(
			"{{response}}", in.Response,
			"{{message}}", in.Message,
			"{{workspace}}", in.Workspace,
			"{{episode_id}}", in.EpisodeID,
			"{{turn}}", strconv.Itoa(in.TurnNumber),
		).Replace(t)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = expandArgs(x, in)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = expandArgs(x, in)
		}
		return out
	case nil:
		return map[string]any{}
	}
	return v
}
