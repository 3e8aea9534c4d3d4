// Package bounds keeps what the server reads and writes within the frame
// limit: ReadCapped reads a body or frame holding at most the limit, and
// EncodeObservation trims an observation to fit a frame, saying so in its
// truncation marker.
//
// The package must not know about connections, sessions or routes.
package bounds
