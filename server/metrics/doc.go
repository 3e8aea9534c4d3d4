// Package metrics owns harnessd's Prometheus metrics: sessions, episodes
// and turns (fed by the sessions' lifecycle events through Observe), tool
// and model calls (from the turns' observations), bytes per surface, and
// the daemon's runtime. They live on a registry of their own, served by
// Handler.
//
// The package must not know about sessions' internals or the transports
// that carry them: it reads session lifecycle events and wire types only.
package metrics
