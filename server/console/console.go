package console

import (
	"net/http"
	"sync"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// Session is one session as the console sees it.
type Session struct {
	ID      string
	Kind    string // the surface that created it (ws, http, harness, mcp)
	Created time.Time
	Session *session.Session
	// ForkedFrom says where a fork's sibling came from (nil for a session
	// not forked).
	ForkedFrom *wire.ForkOrigin
}

// Options wire the console to the server that hosts it.
type Options struct {
	// Config is the environment (its name, harness and record_dir).
	Config *config.Config
	// Isolation names how harness trees are contained and killed:
	// "sandbox", or process isolation's kill mechanisms.
	Isolation string
	// Sessions lists the live sessions; Lookup finds one by id.
	Sessions func() []Session
	Lookup   func(id string) (Session, bool)
	// Guard puts a handler behind the API token (and the peer check);
	// PeerOnly behind the peer check alone (the static assets).
	Guard, PeerOnly func(http.Handler) http.Handler
	// Quit ends the live feeds when the server shuts down.
	Quit <-chan struct{}
	// WriteTimeout bounds one write of the live feed.
	WriteTimeout time.Duration
	// Forks lists the links of the daemon's forks: each sibling to the
	// episode it was forked from (nil: none).
	Forks func() []Fork
}

// Console is the web console: the page, its API over the live sessions and
// record_dir, and the live feed, fed by the sessions' lifecycle (Observe).
type Console struct {
	o     Options
	feed  webFeed
	index *episodeIndex // record_dir's episodes

	mu   sync.Mutex
	logs map[string]*webLog // per live session
}

// New makes a console.
func New(o Options) *Console {
	return &Console{o: o, logs: map[string]*webLog{}, index: newEpisodeIndex(o.Config.RecordDir)}
}

// log returns session id's log, making it on first use.
func (c *Console) log(id string) *webLog {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.logs[id]
	if l == nil {
		l = &webLog{}
		c.logs[id] = l
	}
	return l
}

// Opened publishes a new session.
func (c *Console) Opened(m Session) { c.webChanged(m) }

// Closed publishes the end of session id and forgets what it showed of it.
func (c *Console) Closed(id string) {
	c.mu.Lock()
	delete(c.logs, id)
	c.mu.Unlock()
	c.feed.publish(Message{Type: "session_closed", SessionID: id})
}

// Observe records and publishes what the console shows of m's lifecycle
// event ev (the server's session.Observer calls it).
func (c *Console) Observe(m Session, ev session.Event) { c.webObserve(m, ev) }

// writeJSON writes v as the response body with code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := wire.MarshalNoEscape(v)
	if err != nil {
		b = []byte(`{"detail":"encoding failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(b)
}
