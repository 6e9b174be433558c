package tool

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/openprogram/openprogram/authz"
)

// ErrDuplicate is wrapped by [Registry.Register] when a tool with the same
// name is already registered.
var ErrDuplicate = errors.New("tool already registered")

// Registry holds the runtime's tools by name. Registration order is kept
// and is the order of [Registry.List]. It is safe for concurrent use.
type Registry struct {
	mu     sync.RWMutex
	tools  []Tool
	byName map[string]Tool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byName: map[string]Tool{}}
}

// Register adds t. It fails, leaving the registry unchanged, when the name
// is not [ValidName], the name is taken
// ([ErrDuplicate]), the capability is not an authz capability, or the
// input schema is not a valid JSON Schema 2020-12 object schema
// (*[SchemaError]).
func (r *Registry) Register(t Tool) error {
	if t == nil {
		return errors.New("register tool: tool is nil")
	}
	name := t.Name()
	if !ValidName(name) {
		return fmt.Errorf("register tool %q: name must be 1-64 characters of A-Z a-z 0-9 _ . -", name)
	}
	if !slices.Contains(authz.Capabilities(authz.TierOwner), t.Capability()) {
		return fmt.Errorf("register tool %q: unknown capability %q; use an authz capability", name, t.Capability())
	}
	if _, err := resolveSchema(t.InputSchema()); err != nil {
		return &SchemaError{Tool: name, Err: err}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.byName[name]; dup {
		return fmt.Errorf("register tool %q: %w; pick another name", name, ErrDuplicate)
	}
	r.byName[name] = t
	r.tools = append(r.tools, t)
	return nil
}

// MaxNameLen is the longest tool name, in bytes: what the model APIs take
// for a function's name.
const MaxNameLen = 64

// ValidName reports whether s can name a runtime tool: 1 to [MaxNameLen]
// characters of [A-Za-z0-9_.-]. It is the one tool-name rule: the registry
// refuses any other name, and the configuration refuses to expose one.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '.', c == '-':
		default:
			return false
		}
	}
	return true
}

// Get returns the tool registered under name.
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.byName[name]
	return t, ok
}

// List returns the registered tools in registration order (a fresh slice).
func (r *Registry) List() []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.tools)
}

// Names returns the registered names in registration order.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, len(r.tools))
	for i, t := range r.tools {
		out[i] = t.Name()
	}
	return out
}
