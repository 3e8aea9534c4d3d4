package bounds

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReadCapped(t *testing.T) {
	for _, n := range []int{0, 1, firstChunk - 1, firstChunk, 3*maxChunk + 17} {
		src := bytes.Repeat([]byte("ab"), n/2+1)[:n]
		got, err := ReadCapped(bytes.NewReader(src), 0, int64(n))
		if err != nil || !bytes.Equal(got, src) {
			t.Errorf("%d bytes at a limit of %d: got %d bytes, %v", n, n, len(got), err)
		}
		if n > 0 {
			if got, err := ReadCapped(bytes.NewReader(src), int64(n), int64(n)); err != nil || !bytes.Equal(got, src) {
				t.Errorf("%d bytes with a size hint: got %d bytes, %v", n, len(got), err)
			}
		}
	}
}

func TestReadCappedRefusesWithoutReadingPastTheLimit(t *testing.T) {
	r := strings.NewReader(strings.Repeat("x", 10<<20))
	_, err := ReadCapped(r, 0, 1<<20)
	var big *TooLargeError
	if !errors.As(err, &big) {
		t.Fatalf("err %v, want TooLargeError", err)
	}
	rest, _ := io.Copy(io.Discard, r)
	if read := int64(10<<20) - rest; read != 1<<20+1 {
		t.Errorf("read %d bytes before refusing, want the limit plus one", read)
	}
	if _, err := ReadCapped(strings.NewReader("abc"), 100, 10); !errors.As(err, &big) {
		t.Errorf("a size hint over the limit: err %v, want TooLargeError before reading", err)
	}
	if _, err := ReadCapped(strings.NewReader("abcdef"), 3, 10); err == nil {
		t.Errorf("a body longer than its hint was accepted")
	}
}
