package episode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/harnessd/harnessd/gateway"
)

// The environment's side of the event queue (session runs the queue; the
// episode owns the workspace, the tool sources and the gateway its effects
// reach).

// PlaceFile writes content to rel beneath the workspace (an event's file
// effect). rel must be relative and stay beneath the workspace; no link is
// followed, neither a directory on the way nor the file itself (the
// workspace is the harness's to shape, so it may have planted links), and
// the directories made on the way and the file become the harness's in a
// sandbox.
func (ep *Episode) PlaceFile(rel, content string) error {
	clean := filepath.Clean(rel)
	if filepath.IsAbs(clean) || clean == "." || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return fmt.Errorf("place %q: not a path beneath the workspace", rel)
	}
	root, err := os.OpenRoot(ep.dirs.Workspace)
	if err != nil {
		return fmt.Errorf("place %q: open the workspace: %w", rel, err)
	}
	defer root.Close()
	var made []string
	dir := ""
	for _, part := range strings.Split(filepath.Dir(clean), string(filepath.Separator)) {
		if part == "." || part == "" {
			continue
		}
		dir = filepath.Join(dir, part)
		fi, err := root.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := root.Mkdir(dir, 0o755); err != nil {
				return fmt.Errorf("place %q: make %s: %w", rel, dir, err)
			}
			made = append(made, dir)
		case err != nil:
			return fmt.Errorf("place %q: %w", rel, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("place %q: %s is a symbolic link, which is not followed", rel, dir)
		case !fi.IsDir():
			return fmt.Errorf("place %q: %s is not a directory", rel, dir)
		}
	}
	f, err := root.OpenFile(clean, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return fmt.Errorf("place %q: %w", rel, err)
	}
	if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() {
		f.Close()
		return fmt.Errorf("place %q: not a regular file", rel)
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return fmt.Errorf("place %q: %w", rel, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("place %q: %w", rel, err)
	}
	if ep.sandbox != nil {
		for _, p := range append(made, clean) {
			if err := ep.sandbox.Chown(filepath.Join(ep.dirs.Workspace, p)); err != nil {
				return fmt.Errorf("place %q: give %s to the harness: %w", rel, p, err)
			}
		}
	}
	return nil
}

// CallSourceTool calls tool name (its upstream name) of the configured
// tool source server with args, on the daemon's path (an event's tool
// effect: the environment changing its own state), and returns the result's
// text. A tool that reports an error is an error carrying its text.
func (ep *Episode) CallSourceTool(ctx context.Context, server, name string, args json.RawMessage) (string, error) {
	if ep.catalog == nil {
		return "", errors.New("no tools are configured")
	}
	src, ok := ep.catalog.Source(server)
	if !ok {
		return "", fmt.Errorf("no tool server %q", server)
	}
	res, err := src.Call(ctx, name, args)
	if err != nil {
		return "", err
	}
	if res == nil {
		return "", fmt.Errorf("tool %s/%s returned no result", server, name)
	}
	text := resultText(res)
	if res.IsError {
		return text, fmt.Errorf("tool reported an error: %s", text)
	}
	return text, nil
}

// NoteEnvEvent tells the episode's model gateway, if any, that an event of
// the environment's queue fired, for the training export (its events and
// the prompt span each entered).
func (ep *Episode) NoteEnvEvent(e gateway.EnvEvent) {
	if ep.model != nil {
		ep.model.gw.NoteEvent(e)
	}
}
