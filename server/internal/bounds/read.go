package bounds

import (
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Chunk sizes of ReadCapped: small frames take one small allocation, large
// ones grow in steps that are never copied into doubling buffers.
const (
	firstChunk = 4 << 10
	maxChunk   = 1 << 20
)

// TooLargeError reports input over the limit; nothing past the limit was kept.
type TooLargeError struct{ limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("input exceeds the maximum of %d bytes", e.limit)
}

// ReadCapped reads r to its end and returns what it read, holding at most
// limit bytes at any time: one byte more is an *TooLargeError, with the rest
// of r left unread. hint, when positive, is the expected size (a
// Content-Length), read into one exact allocation.
func ReadCapped(r io.Reader, hint, limit int64) ([]byte, error) {
	if hint > limit {
		return nil, &TooLargeError{limit}
	}
	if hint > 0 {
		buf := make([]byte, hint, hint+1)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, readErr(err, limit)
		}
		// The body must end here; a longer one is over its length and, past
		// the limit, too large.
		var one [1]byte
		if n, err := r.Read(one[:]); n > 0 {
			return nil, fmt.Errorf("body longer than its Content-Length of %d", hint)
		} else if err != nil && err != io.EOF {
			return nil, readErr(err, limit)
		}
		return buf, nil
	}
	var chunks [][]byte
	var total int64
	size := int64(firstChunk)
	for {
		c := make([]byte, min(size, limit+1-total))
		n, err := io.ReadFull(r, c)
		total += int64(n)
		if n > 0 {
			chunks = append(chunks, c[:n])
		}
		if total > limit {
			return nil, &TooLargeError{limit}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, readErr(err, limit)
		}
		size = min(2*size, maxChunk)
	}
	if len(chunks) == 1 {
		return chunks[0], nil
	}
	out := make([]byte, 0, total)
	for _, c := range chunks {
		out = append(out, c...)
	}
	return out, nil
}

// readErr maps http.MaxBytesReader's error onto TooLargeError.
func readErr(err error, limit int64) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &TooLargeError{limit}
	}
	return err
}
