package episode

import "errors"

// Errors of Episode.Export.
var (
	// ErrNoModelGateway: the episode has no model gateway (harness.model.url
	// is not set), so no model traffic was captured.
	ErrNoModelGateway = errors.New("the episode has no model gateway (harness.model.url is not set): no model traffic was captured")
	// ErrNoTrainingCalls: the episode made no model call usable for
	// training; Export returns the export beside it, for its calls and
	// issues.
	ErrNoTrainingCalls = errors.New("the episode has no training traffic")
)
