package harness

import (
	"errors"
	"fmt"
	"sort"
	"sync"
)

// AdapterFactory makes an adapter for the harness section of an
// environment's configuration; it checks the section's adapter options.
type AdapterFactory func(cfg *Config) (Adapter, error)

// Registry maps adapter names (a configuration's harness.adapter) to the
// factories that make them. A program builds one with the adapters it links
// and hands it to NewSession (Options.Adapters) or the server; nothing is
// registered behind its back. The zero value is an empty registry ready to
// use. A Registry is safe for concurrent use and must not be copied after
// first use.
type Registry struct {
	mu sync.RWMutex
	m  map[string]AdapterFactory
}

// Add makes the adapter f available as name. An empty name, a nil factory
// or a name already added is an error.
func (r *Registry) Add(name string, f AdapterFactory) error {
	if name == "" {
		return errors.New("harness: adapter with an empty name")
	}
	if f == nil {
		return fmt.Errorf("harness: adapter %q has no factory", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[name]; dup {
		return fmt.Errorf("harness: adapter %q added twice", name)
	}
	if r.m == nil {
		r.m = map[string]AdapterFactory{}
	}
	r.m[name] = f
	return nil
}

// Names lists the added adapter names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.m))
	for n := range r.m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// New makes the adapter named by cfg.Adapter. An unknown name is an
// error listing the known ones.
func (r *Registry) New(cfg *Config) (Adapter, error) {
	r.mu.RLock()
	f, ok := r.m[cfg.Adapter]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("unknown adapter %q (known: %v)", cfg.Adapter, r.Names())
	}
	return f(cfg)
}
