package control

import (
	"errors"
	"os"
	"strings"
	"testing"
)

type msg struct {
	Body string `json:"body"`
}

// A message of several packets arrives whole, with its descriptors; the
// receive buffers are reused between messages, so a short message after
// a long one must not carry the long one's bytes.
func TestMessagesLongerThanAPacketArriveWholeWithTheirDescriptors(t *testing.T) {
	fa, fb, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := Conn(fa)
	b, _ := Conn(fb)
	defer a.Close()
	defer b.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	long := strings.Repeat("x", 3*packetSize+17)
	for _, body := range []string{long, "short"} {
		if err := Send(a, msg{body}, int(w.Fd())); err != nil {
			t.Fatal(err)
		}
		var got msg
		files, err := Receive(b, &got)
		if err != nil {
			t.Fatal(err)
		}
		if got.Body != body || len(files) != 1 {
			t.Fatalf("received %d bytes and %d files, want %d bytes and 1 file", len(got.Body), len(files), len(body))
		}
		if _, err := files[0].Write([]byte("k")); err != nil {
			t.Fatalf("the descriptor sent is not the pipe's write end: %v", err)
		}
		CloseAll(files)
	}
	if err := Send(a, msg{strings.Repeat("y", maxMessageSize)}); err == nil {
		t.Fatal("a message over the limit was sent")
	}
	a.Close()
	if _, err := Receive(b, &msg{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after the peer closed: %v, want ErrClosed", err)
	}
}
