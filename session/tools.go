package session

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harnessd/harnessd/bridge"
	"github.com/harnessd/harnessd/episode"
	"github.com/harnessd/harnessd/gateway"
)

// ErrUnknownEpisode: the session's current (or last) episode is not the
// one asked for.
var ErrUnknownEpisode = errors.New("unknown episode: not the session's current or last episode")

// Errors of Export, from package episode.
var (
	ErrNoModelGateway  = episode.ErrNoModelGateway
	ErrNoTrainingCalls = episode.ErrNoTrainingCalls
)

// ToolInfo is a tool as the orchestrator sees it through OpenEnv's /mcp
// route.
type ToolInfo = episode.ToolInfo

// Export returns the training export of the session's current or last
// episode (episodeID "" means whichever that is): see episode.Episode.Export.
func (s *Session) Export(episodeID string) (*gateway.Export, error) {
	r := s.current()
	if r == nil || (episodeID != "" && r.id != episodeID) {
		return nil, ErrUnknownEpisode
	}
	return r.ep.Export()
}

// EpisodeID returns the id of the session's current or last episode (""
// if none).
func (s *Session) EpisodeID() string {
	if r := s.current(); r != nil {
		return r.id
	}
	return ""
}

// orchestratorCatalog returns the running episode's catalog, or one built
// from the persistent tool sources when no episode runs (MCP actions work
// without reset).
func (s *Session) orchestratorCatalog(ctx context.Context) (*bridge.Catalog, error) {
	s.mu.Lock()
	if r := s.cur; r != nil && r.active && r.ep.Catalog() != nil {
		cat := r.ep.Catalog()
		s.mu.Unlock()
		return cat, nil
	}
	if s.closed || s.busy {
		s.mu.Unlock()
		return nil, ErrBusy
	}
	s.busy = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.busy = false
		s.mu.Unlock()
	}()
	return s.env.Catalog(ctx)
}

// ListTools lists the environment's visible tools under their original
// names. Hidden tools (graders) are not listed.
func (s *Session) ListTools(ctx context.Context) ([]ToolInfo, error) {
	cat, err := s.orchestratorCatalog(ctx)
	if err != nil {
		return nil, err
	}
	return episode.ToolList(cat), nil
}

// CallTool calls a visible tool by its original or served name. A name no
// visible tool has is an error wrapping bridge.ErrUnknownTool.
func (s *Session) CallTool(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	cat, err := s.orchestratorCatalog(ctx)
	if err != nil {
		return nil, err
	}
	return episode.CallVisible(ctx, cat, name, args)
}
