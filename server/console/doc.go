// Package console owns harnessd's web console (simulation mode): the
// single page embedded from web/ (plain HTML, CSS and JavaScript, no
// library, no CDN, no build step), its JSON API over the live sessions and
// record_dir's files, and the live feed (server-sent events) of what the
// sessions do, fed by their lifecycle events.
//
// The package must not run sessions or decide who may see the console: the
// server hosts it, hands it the sessions, and puts its routes behind the
// API token (Options.Guard).
package console
