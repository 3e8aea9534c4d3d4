// Package console owns harnessd's web console (simulation mode): the
// single page embedded from web/ (plain HTML, CSS and JavaScript, no
// library, no CDN, no build step) with its four views (live sessions, the
// episodes table, one episode, the overview's charts), its JSON API over
// the live sessions and record_dir's files, the index of record_dir's
// episodes behind the episodes and overview APIs (index.go: incremental,
// bounded), and the live feed (server-sent events) of what the sessions
// do, fed by their lifecycle events. docs/console.md describes it.
//
// The package must not run sessions, write record_dir, or decide who may
// see the console: the server hosts it, hands it the sessions, and puts its
// routes behind the API token (Options.Guard).
package console
