package gateway

import (
	"encoding/json"
	"net/http"
)

// failure is an error the agent gets, in its dialect's shape: an HTTP
// status and what kind of error it is.
type failure struct {
	status  int
	kind    failureKind
	message string
}

// failureKind classifies an error for the dialects' error types.
type failureKind int

const (
	failInvalid     failureKind = iota // malformed request (400)
	failAuth                           // wrong or missing key (401)
	failNotFound                       // no such route (404)
	failMethod                         // wrong method (405)
	failTooLarge                       // body over the bound (413)
	failBudget                         // a budget ran out (429, not worth retrying)
	failRateLimit                      // the upstream said 429
	failUpstream                       // the upstream failed or answered garbage (502, retryable)
	failUnavailable                    // the upstream is down (503, retryable)
	failTimeout                        // the upstream was too slow (504, retryable)
)

// openAIError answers in OpenAI's error shape (Chat Completions and
// Responses).
func openAIError(w http.ResponseWriter, f failure) {
	typ, code := "invalid_request_error", any(nil)
	switch f.kind {
	case failAuth:
		typ, code = "authentication_error", "invalid_api_key"
	case failNotFound:
		code = "not_found"
	case failBudget:
		typ, code = "insufficient_quota", "insufficient_quota"
	case failRateLimit:
		typ, code = "rate_limit_error", "rate_limit_exceeded"
	case failUpstream, failUnavailable, failTimeout:
		typ = "server_error"
	}
	writeJSON(w, f.status, map[string]any{"error": map[string]any{"message": f.message, "type": typ, "param": nil, "code": code}})
}

// writeJSON answers v as a JSON body with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "gateway: encode: "+err.Error(), http.StatusInternalServerError)
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err = w.Write(append(b, '\n'))
	return err
}
