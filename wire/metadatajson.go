package wire

import "strconv"

// metadataFields appends m without its turn events as encoding/json writes
// it (declaration order, omitempty): a turn's observation sets a few scalar
// fields, written here directly; the others go through the encoder, and
// only when set. It was 2% of the daemon's CPU at 64 sessions stepping
// when the encoder reflected over the whole struct at every turn (issue
// 28). TestMetadataFieldsMatchTheEncoder compares it with the encoder for
// every field, so a field added to Metadata and not here fails it.
func (w *jsonWriter) metadataFields(m *Metadata) error {
	f := fieldWriter{w: w}
	w.buf.WriteByte('{')
	f.str(`"episode_id":`, m.EpisodeID)
	if m.TurnNumber != 0 {
		f.key(`"turn_number":`)
		w.buf.Write(strconv.AppendInt(w.buf.AvailableBuffer(), int64(m.TurnNumber), 10))
	}
	if m.Response != nil && f.err == nil {
		f.key(`"response":`)
		f.err = w.str(*m.Response)
	}
	f.flag(`"harness_done":`, m.HarnessDone)
	f.flag(`"cancelled":`, m.Cancelled)
	if len(m.InjectedTools) > 0 {
		f.value(`"injected_tools":`, m.InjectedTools)
	}
	f.str(`"isolation":`, m.Isolation)
	f.flag(`"standby":`, m.Standby)
	if m.Fork != nil {
		f.value(`"fork":`, m.Fork)
	}
	if len(m.RewardDetails) > 0 {
		f.value(`"reward_details":`, m.RewardDetails)
	}
	f.str(`"error_type":`, string(m.ErrorType))
	f.str(`"error":`, m.Error)
	if m.Exit != nil {
		f.value(`"exit":`, m.Exit)
	}
	f.str(`"stderr_tail":`, m.StderrTail)
	if m.Truncated != nil {
		f.value(`"truncated":`, m.Truncated)
	}
	if len(m.LimitsReached) > 0 {
		f.value(`"limits_reached":`, m.LimitsReached)
	}
	if len(m.Extra) > 0 {
		f.value(`"extra":`, m.Extra)
	}
	if len(m.ModelIssues) > 0 {
		f.value(`"model_issues":`, m.ModelIssues)
	}
	f.str(`"task_id":`, m.TaskID)
	f.str(`"task_instruction":`, m.TaskInstruction)
	if len(m.TaskMetadata) > 0 {
		f.value(`"task_metadata":`, m.TaskMetadata)
	}
	if m.Grade != nil {
		f.value(`"grade":`, m.Grade)
	}
	f.str(`"message_source":`, m.MessageSource)
	f.flag(`"user_done":`, m.UserDone)
	f.str(`"user_reason":`, m.UserReason)
	w.buf.WriteByte('}')
	return f.err
}

// fieldWriter writes an object's members after its opening brace: a comma
// before each but the first, and the first error.
type fieldWriter struct {
	w    *jsonWriter
	some bool
	err  error
}

// key writes k (the quoted name and the colon), after a comma if needed.
func (f *fieldWriter) key(k string) {
	if f.some {
		f.w.buf.WriteByte(',')
	}
	f.some = true
	f.w.buf.WriteString(k)
}

// str writes a string member unless s is empty (omitempty).
func (f *fieldWriter) str(k, s string) {
	if s == "" || f.err != nil {
		return
	}
	f.key(k)
	f.err = f.w.str(s)
}

// flag writes a true member (omitempty: false is left out).
func (f *fieldWriter) flag(k string, b bool) {
	if b {
		f.key(k)
		f.w.buf.WriteString("true")
	}
}

// value writes a member through the encoder.
func (f *fieldWriter) value(k string, v any) {
	if f.err != nil {
		return
	}
	f.key(k)
	f.err = f.w.value(v)
}
