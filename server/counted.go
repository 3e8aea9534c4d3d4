package server

import (
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
)

// counted wraps an HTTP (non-WebSocket) handler of surface so that the
// request and response bodies' bytes reach /metrics.
func (s *Server) counted(surface string, h http.HandlerFunc) http.Handler {
	received, sent := s.metrics.Bytes(surface)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The original body goes back before the server finishes the
		// request: net/http decides by its type whether an unread body is
		// too big to drain (a 413 answered at once) or is to be read first.
		orig := r.Body
		r.Body = &countingBody{ReadCloser: orig, c: received}
		defer func() { r.Body = orig }()
		h(&countingWriter{ResponseWriter: w, c: sent}, r)
	})
}

// countingBody counts the bytes read from a request body.
type countingBody struct {
	io.ReadCloser
	c prometheus.Counter
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.c.Add(float64(n))
	return n, err
}

// countingWriter counts the bytes written to a response body.
type countingWriter struct {
	http.ResponseWriter
	c prometheus.Counter
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.c.Add(float64(n))
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
