package memory

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/builtin/internal/tooldef"
	"github.com/openprogram/openprogram/runtime/tool"
	"github.com/openprogram/openprogram/sessions"
)

// Reason codes the memory tools report in tool.Result.Reason.
const (
	ReasonNotFound    = "NOT_FOUND"
	ReasonConflict    = "CONFLICT"
	ReasonNoAuthority = "NO_AUTHORITY"
)

// Defaults and bounds of the search tools.
const (
	DefaultTopK      = 10
	MaxTopK          = 100
	DefaultGrepLimit = 100
	MaxGrepLimit     = 1000
)

// Tools returns the memory tools over store in a fixed order:
// memory_status, memory_search, memory_grep, memory_get, memory_browse,
// memory_update, memory_promote.
func Tools(store sessions.Store) []tool.Tool {
	m := &mem{store: store}
	return []tool.Tool{
		tooldef.New("memory_status", "Report how many memory sources and trusted pages exist and the memory revision.",
			statusSchema, authz.CapMemoryRead, m.status),
		tooldef.New("memory_search", "Full-text search over memory (appended sources and owner-promoted trusted pages), best matches first. The query is plain words.",
			searchSchema, authz.CapMemoryRead, m.search),
		tooldef.New("memory_grep", "Find memory lines containing a literal substring, in path order, with line numbers.",
			grepSchema, authz.CapMemoryRead, m.grep),
		tooldef.New("memory_get", "Get everything stored at one memory path: the trusted page (if promoted), every source with who wrote it, and the path's revision for memory_update.",
			getSchema, authz.CapMemoryRead, m.get),
		tooldef.New("memory_browse", "List memory paths under a prefix with their source counts, trusted flag and revisions.",
			browseSchema, authz.CapMemoryRead, m.browse),
		tooldef.New("memory_update", "Append a source to a memory path, stamped with who you are. Pass base_revision (from memory_get; 0 for a new path) to fail instead of overwriting a concurrent change.",
			updateSchema, authz.CapMemorySourceAppend, m.update),
		tooldef.New("memory_promote", "Promote a source to the trusted page at its path (owner only).",
			promoteSchema, authz.CapMemoryTrustedPromote, m.promote),
	}
}

type mem struct {
	store sessions.Store
}

var statusSchema = tooldef.Object(nil)

type statusOut struct {
	Sources      int64 `json:"sources"`
	TrustedPages int64 `json:"trusted_pages"`
	Revision     int64 `json:"revision"`
}

func (m *mem) status(ctx context.Context, _ string, _ struct{}, _ func(string)) (tool.Result, error) {
	st, err := m.store.MemoryStatus(ctx)
	if err != nil {
		return tool.Result{}, storeErr("memory_status", err)
	}
	return tooldef.JSON(statusOut{Sources: st.Sources, TrustedPages: st.TrustedPages, Revision: st.Revision})
}

var searchSchema = tooldef.Object([]string{"query"},
	`"query": {"type": "string", "minLength": 1, "maxLength": 1000, "description": "Plain words to search for."}`,
	`"top_k": {"type": "integer", "minimum": 1, "maximum": 100, "description": "Maximum hits. Default 10."}`,
	`"path_prefix": {"type": "string", "maxLength": 512, "description": "Only paths starting with this prefix."}`,
)

type searchArgs struct {
	Query      string `json:"query"`
	TopK       int    `json:"top_k"`
	PathPrefix string `json:"path_prefix"`
}

type hitOut struct {
	Layer    string  `json:"layer"`
	Path     string  `json:"path"`
	SourceID int64   `json:"source_id"`
	Snippet  string  `json:"snippet"`
	Score    float64 `json:"score,omitempty"`
	Line     int     `json:"line,omitempty"`
}

type hitsOut struct {
	Hits []hitOut `json:"hits"`
}

func toHits(hs []sessions.MemoryHit) hitsOut {
	out := hitsOut{Hits: make([]hitOut, len(hs))}
	for i, h := range hs {
		out.Hits[i] = hitOut{Layer: h.Layer, Path: h.Path, SourceID: h.SourceID, Snippet: h.Snippet, Score: h.Score, Line: h.Line}
	}
	return out
}

func (m *mem) search(ctx context.Context, _ string, a searchArgs, _ func(string)) (tool.Result, error) {
	k := a.TopK
	if k <= 0 {
		k = DefaultTopK
	}
	hs, err := m.store.SearchMemory(ctx, a.Query, min(k, MaxTopK), a.PathPrefix)
	if err != nil {
		return tool.Result{}, storeErr("memory_search", err)
	}
	return tooldef.JSON(toHits(hs))
}

var grepSchema = tooldef.Object([]string{"substring"},
	`"substring": {"type": "string", "minLength": 1, "maxLength": 1000, "description": "Literal text to find (not a regular expression)."}`,
	`"path_prefix": {"type": "string", "maxLength": 512, "description": "Only paths starting with this prefix."}`,
	`"case_sensitive": {"type": "boolean", "description": "Match case exactly. Default false."}`,
	`"limit": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Maximum matching lines. Default 100."}`,
)

type grepArgs struct {
	Substring     string `json:"substring"`
	PathPrefix    string `json:"path_prefix"`
	CaseSensitive bool   `json:"case_sensitive"`
	Limit         int    `json:"limit"`
}

func (m *mem) grep(ctx context.Context, _ string, a grepArgs, _ func(string)) (tool.Result, error) {
	limit := a.Limit
	if limit <= 0 {
		limit = DefaultGrepLimit
	}
	hs, err := m.store.GrepMemory(ctx, a.Substring, a.PathPrefix, a.CaseSensitive, min(limit, MaxGrepLimit))
	if err != nil {
		return tool.Result{}, storeErr("memory_grep", err)
	}
	return tooldef.JSON(toHits(hs))
}

var getSchema = tooldef.Object([]string{"path"},
	`"path": {"type": "string", "minLength": 1, "maxLength": 512, "description": "The memory path."}`,
)

type pathArgs struct {
	Path string `json:"path"`
}

type trustedOut struct {
	Content   string `json:"content"`
	Revision  int64  `json:"revision"`
	SourceID  int64  `json:"source_id"`
	UpdatedAt string `json:"updated_at"`
}

type sourceOut struct {
	ID        int64                    `json:"id"`
	Content   string                   `json:"content"`
	Authority sessions.SourceAuthority `json:"authority"`
	Revision  int64                    `json:"revision"`
	CreatedAt string                   `json:"created_at"`
}

type pageOut struct {
	Path     string      `json:"path"`
	Revision int64       `json:"revision"`
	Trusted  *trustedOut `json:"trusted"`
	Sources  []sourceOut `json:"sources"`
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func (m *mem) get(ctx context.Context, _ string, a pathArgs, _ func(string)) (tool.Result, error) {
	p, err := m.store.GetMemory(ctx, a.Path)
	if err != nil {
		return tool.Result{}, storeErr("memory_get", err)
	}
	out := pageOut{Path: p.Path, Revision: p.Revision, Sources: make([]sourceOut, len(p.Sources))}
	if p.Trusted != nil {
		out.Trusted = &trustedOut{Content: p.Trusted.Content, Revision: p.Trusted.Revision, SourceID: p.Trusted.SourceID, UpdatedAt: stamp(p.Trusted.UpdatedAt)}
	}
	for i, s := range p.Sources {
		out.Sources[i] = sourceOut{ID: s.ID, Content: s.Content, Authority: s.Authority, Revision: s.Revision, CreatedAt: stamp(s.CreatedAt)}
	}
	return tooldef.JSON(out)
}

var browseSchema = tooldef.Object(nil,
	`"prefix": {"type": "string", "maxLength": 512, "description": "Only paths starting with this prefix. Default: all."}`,
)

type browseArgs struct {
	Prefix string `json:"prefix"`
}

type entryOut struct {
	Path      string `json:"path"`
	Sources   int64  `json:"sources"`
	Trusted   bool   `json:"trusted"`
	Revision  int64  `json:"revision"`
	UpdatedAt string `json:"updated_at"`
}

type entriesOut struct {
	Entries []entryOut `json:"entries"`
}

func (m *mem) browse(ctx context.Context, _ string, a browseArgs, _ func(string)) (tool.Result, error) {
	es, err := m.store.BrowseMemory(ctx, a.Prefix)
	if err != nil {
		return tool.Result{}, storeErr("memory_browse", err)
	}
	out := entriesOut{Entries: make([]entryOut, len(es))}
	for i, e := range es {
		out.Entries[i] = entryOut{Path: e.Path, Sources: e.Sources, Trusted: e.Trusted, Revision: e.Revision, UpdatedAt: stamp(e.UpdatedAt)}
	}
	return tooldef.JSON(out)
}

var updateSchema = tooldef.Object([]string{"path", "content"},
	`"path": {"type": "string", "minLength": 1, "maxLength": 512, "description": "The memory path, e.g. projects/openprogram/notes."}`,
	`"content": {"type": "string", "minLength": 1, "description": "The source text to append."}`,
	`"base_revision": {"type": "integer", "minimum": 0, "description": "The path's revision you based this on (memory_get; 0 for a new path). Omit to append without a check."}`,
)

type updateArgs struct {
	Path         string `json:"path"`
	Content      string `json:"content"`
	BaseRevision *int64 `json:"base_revision"`
}

type updateOut struct {
	SourceID int64  `json:"source_id"`
	Path     string `json:"path"`
	Revision int64  `json:"revision"`
}

func (m *mem) update(ctx context.Context, _ string, a updateArgs, _ func(string)) (tool.Result, error) {
	info, ok := tool.CallFrom(ctx)
	if !ok {
		return tool.Result{}, tooldef.Fail(ReasonNoAuthority, "memory_update needs the caller's authority; run it through the gate")
	}
	if err := info.Speaker.Check(); err != nil {
		return tool.Result{}, tooldef.Fail(ReasonNoAuthority, "memory_update: caller authority is invalid: %v", err)
	}
	base := baseRevision(a.BaseRevision)
	src, err := m.store.AppendSource(ctx, sessions.NewSource{
		Path: a.Path, Content: a.Content, Authority: tool.StoredAuthority(info.Speaker),
	}, base)
	if err != nil {
		return tool.Result{}, m.conflictErr(ctx, "memory_update", a.Path, base, err)
	}
	return tooldef.JSON(updateOut{SourceID: src.ID, Path: src.Path, Revision: src.Revision})
}

var promoteSchema = tooldef.Object([]string{"source_id"},
	`"source_id": {"type": "integer", "minimum": 1, "description": "The source to promote (from memory_get or memory_search)."}`,
	`"base_revision": {"type": "integer", "minimum": 0, "description": "The path's revision you based this on. Omit to promote without a check."}`,
)

type promoteArgs struct {
	SourceID     int64  `json:"source_id"`
	BaseRevision *int64 `json:"base_revision"`
}

type promoteOut struct {
	Path     string `json:"path"`
	SourceID int64  `json:"source_id"`
	Revision int64  `json:"revision"`
}

func (m *mem) promote(ctx context.Context, _ string, a promoteArgs, _ func(string)) (tool.Result, error) {
	// The gate already checks memory.trusted.promote; this is defence in
	// depth for a caller that skipped it.
	info, ok := tool.CallFrom(ctx)
	if !ok || !info.Speaker.Valid() || info.Speaker.Authority().Tier != authz.TierOwner {
		return tool.DeniedResult(authz.Decision{ReasonCode: authz.ReasonCapability, Capability: authz.CapMemoryTrustedPromote,
			Message: "memory_promote is for the owner only"}), nil
	}
	base := baseRevision(a.BaseRevision)
	tp, err := m.store.Promote(ctx, a.SourceID, base)
	if err != nil {
		return tool.Result{}, m.conflictErr(ctx, "memory_promote", "", base, err)
	}
	return tooldef.JSON(promoteOut{Path: tp.Path, SourceID: tp.SourceID, Revision: tp.Revision})
}

// conflictErr maps a revision conflict to a failure naming the current
// revision (when path is known), and other errors as storeErr does.
func (m *mem) conflictErr(ctx context.Context, op, path string, base int64, err error) error {
	if !errors.Is(err, sessions.ErrConflict) {
		return storeErr(op, err)
	}
	f := &tooldef.Failure{Reason: ReasonConflict, Msg: fmt.Sprintf("%s: the memory path changed since revision %d; read it again with memory_get and retry", op, base)}
	if path != "" {
		cur := int64(0)
		if p, gerr := m.store.GetMemory(ctx, path); gerr == nil {
			cur = p.Revision
		}
		f.Msg = fmt.Sprintf("%s: %s is at revision %d, not %d; read it again with memory_get and retry", op, path, cur, base)
		f.Details = map[string]any{"current_revision": cur}
	}
	return f
}

func storeErr(op string, err error) error {
	switch {
	case errors.Is(err, sessions.ErrNotFound):
		return tooldef.Fail(ReasonNotFound, "%s: not found", op)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return fmt.Errorf("%s: %w", op, err)
}

// baseRevision is the base revision a store write checks: the one given,
// or -1 (no check) when base_revision was omitted.
func baseRevision(given *int64) int64 {
	if given == nil {
		return -1
	}
	return *given
}
