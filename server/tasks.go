package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/tasks"
)

// Page bounds of GET /tasks.
const (
	defaultTasksLimit = 100
	maxTasksLimit     = 1000
)

// parseTaskKwargs reads the reset keyword arguments that pick a task:
// task_id (a string) and task_index (an integer >= 0), either may be null.
func parseTaskKwargs(raw map[string]json.RawMessage, o *session.ResetOptions) []fieldError {
	var errs []fieldError
	if v, ok := raw["task_id"]; ok && !bytes.Equal(v, []byte("null")) {
		if err := json.Unmarshal(v, &o.TaskID); err != nil {
			errs = append(errs, fieldError{Type: "string_type", Loc: []any{"task_id"}, Msg: "Input should be a valid string", Input: rawInput(v)})
		} else if fe := textFieldError(o.TaskID, 255, false, "task_id"); fe != nil {
			errs = append(errs, *fe)
		}
	}
	if v, ok := raw["task_index"]; ok && !bytes.Equal(v, []byte("null")) {
		var i int
		if err := json.Unmarshal(v, &i); err != nil {
			errs = append(errs, fieldError{Type: "int_type", Loc: []any{"task_index"}, Msg: "Input should be a valid integer", Input: rawInput(v)})
		} else if i < 0 {
			errs = append(errs, fieldError{Type: "greater_than_equal", Loc: []any{"task_index"}, Msg: "Input should be greater than or equal to 0", Input: i})
		} else {
			o.TaskIndex = &i
		}
	}
	return errs
}

// checkTaskChoice refuses, before any session work, a task choice that
// names no task of the served taskset (VALIDATION_ERROR, HTTP 422).
func (s *Server) checkTaskChoice(o session.ResetOptions) *wireError {
	if o.TaskID == "" && o.TaskIndex == nil {
		return nil
	}
	loc := "task_id"
	if o.TaskID == "" {
		loc = "task_index"
	}
	set := s.cfg.Taskset()
	if set == nil {
		return invalidChoice(fieldError{Type: "value_error", Loc: []any{loc}, Msg: session.ErrNoTaskset.Error(), Input: choiceInput(o)})
	}
	if o.TaskID != "" && o.TaskIndex != nil {
		return invalidChoice(fieldError{Type: "value_error", Loc: []any{"task_index"}, Msg: "give task_id or task_index, not both", Input: *o.TaskIndex})
	}
	if _, err := set.Pick(tasks.Choice{ID: o.TaskID, Index: o.TaskIndex}); err != nil {
		return invalidChoice(fieldError{Type: "value_error", Loc: []any{loc}, Msg: err.Error(), Input: choiceInput(o)})
	}
	return nil
}

// invalidChoice is the VALIDATION_ERROR of a refused task choice, its
// reason in the message as well as in errors: OpenEnv's client shows only
// the message ("Invalid message (code: VALIDATION_ERROR)" told nothing).
func invalidChoice(fe fieldError) *wireError {
	w := invalid(fe)
	w.Message += ": " + fe.Msg
	return w
}

func choiceInput(o session.ResetOptions) any {
	if o.TaskID != "" {
		return o.TaskID
	}
	return *o.TaskIndex
}

// isTaskChoiceError reports a reset refused for its task choice.
func isTaskChoiceError(err error) bool {
	return errors.Is(err, tasks.ErrNoSuchTask) || errors.Is(err, session.ErrNoTaskset)
}

// taskEntry is one task as GET /tasks lists it.
type taskEntry struct {
	Index           int            `json:"index"`
	ID              string         `json:"id"`
	Name            string         `json:"name,omitempty"`
	Instruction     string         `json:"instruction"`
	Metadata        map[string]any `json:"metadata,omitempty"`
	WorkDir         string         `json:"workdir"`
	AgentTimeoutS   float64        `json:"agent_timeout_sec,omitempty"`
	VerifierTimeout float64        `json:"verifier_timeout_sec"`
	Warnings        []string       `json:"warnings,omitempty"`
}

// handleTasks: GET /tasks?offset=&limit= lists the served tasks in the
// order task_index counts them.
func (s *Server) handleTasks(w http.ResponseWriter, r *http.Request) {
	set := s.cfg.Taskset()
	q := r.URL.Query()
	offset, limit := 0, defaultTasksLimit
	for _, p := range []struct {
		name string
		dst  *int
		max  int
	}{{"offset", &offset, -1}, {"limit", &limit, maxTasksLimit}} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || (p.max > 0 && (n > p.max || n == 0)) {
			msg := "must be an integer >= 0"
			if p.max > 0 {
				msg = "must be an integer from 1 to " + strconv.Itoa(p.max)
			}
			writeJSONStatus(w, http.StatusUnprocessableEntity, map[string]any{"detail": p.name + " " + msg})
			return
		}
		*p.dst = n
	}
	out := map[string]any{"total": 0, "offset": offset, "limit": limit, "tasks": []taskEntry{}}
	if set != nil {
		all := set.Tasks()
		out["total"] = len(all)
		var page []taskEntry
		for i := offset; i < len(all) && i < offset+limit; i++ {
			t := all[i]
			page = append(page, taskEntry{Index: i, ID: t.ID, Name: t.Name, Instruction: t.Instruction, Metadata: t.Metadata,
				WorkDir: t.WorkDir, AgentTimeoutS: t.AgentTimeout.Seconds(), VerifierTimeout: t.VerifierTimeout.Seconds(), Warnings: t.Warnings})
		}
		if page != nil {
			out["tasks"] = page
		}
	}
	writeJSONStatus(w, http.StatusOK, out)
}

// tasksMetadata is /metadata's "tasks": how many tasks are served, and
// where the list is.
func (s *Server) tasksMetadata() any {
	set := s.cfg.Taskset()
	if set == nil {
		return nil
	}
	ids := []string{}
	for i, t := range set.Tasks() {
		if i == 20 {
			break
		}
		ids = append(ids, t.ID)
	}
	return map[string]any{"count": set.Len(), "first_ids": ids, "list": "/tasks",
		"reset_kwargs": []string{"task_id", "task_index", "seed"}}
}
