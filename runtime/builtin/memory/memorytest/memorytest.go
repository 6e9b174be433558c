// Package memorytest is the conformance suite of the built-in memory tools
// (package memory) over a sessions.Store: each backend's tests run it on a
// fresh store of their own, so the tools are checked on every backend without
// this module depending on any but the one it tests with.
package memorytest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/builtin/memory"
	"github.com/openprogram/openprogram/runtime/gate"
	"github.com/openprogram/openprogram/runtime/tool"
	"github.com/openprogram/openprogram/sessions"
)

// Run runs the suite as subtests, each on a fresh, empty store from open.
func Run(t *testing.T, open func(t *testing.T) sessions.Store) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(t *testing.T, s sessions.Store)
	}{
		{"UpdateStampsAuthorityAndChecksRevision", updateStampsAuthorityAndChecksRevision},
		{"SearchGrepBrowse", searchGrepBrowse},
		{"PromoteOwnerOnly", promoteOwnerOnly},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open(t)) })
	}
}

const principal = "owner/install/fedcba9876543210"

// paired is an MCP client's speaker.
func paired(t *testing.T) authz.Speaker {
	t.Helper()
	sp, err := authz.NewMCPClient("0123456789abcdef", principal, authz.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// owner is the owner's speaker.
func owner(t *testing.T) authz.Speaker {
	t.Helper()
	sp, err := authz.NewOwner(principal, true, authz.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

type harness struct {
	t   *testing.T
	reg *tool.Registry
	ex  *tool.Executor
}

func newHarness(t *testing.T, s sessions.Store) *harness {
	t.Helper()
	reg := tool.NewRegistry()
	for _, tl := range memory.Tools(s) {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	return &harness{t: t, reg: reg, ex: tool.NewExecutor(nil)}
}

// call runs a tool as the given speaker (no CallInfo when who is nil).
func (h *harness) call(who *tool.CallInfo, name string, args any) tool.Result {
	h.t.Helper()
	tl, ok := h.reg.Get(name)
	if !ok {
		h.t.Fatalf("no tool %s", name)
	}
	raw, _ := json.Marshal(args)
	ctx := context.Background()
	if who != nil {
		ctx = tool.WithCall(ctx, *who)
	}
	return h.ex.Execute(ctx, tl, "c", raw, nil)
}

// decode runs a tool that must succeed and decodes its JSON text.
func (h *harness) decode(who *tool.CallInfo, name string, args any, v any) {
	h.t.Helper()
	res := h.call(who, name, args)
	if res.IsError {
		h.t.Fatalf("%s(%v) IsError: %s", name, args, res.Text())
	}
	if err := json.Unmarshal([]byte(res.Text()), v); err != nil {
		h.t.Fatalf("%s result %q is not JSON: %v", name, res.Text(), err)
	}
}

type status struct {
	Sources      int64 `json:"sources"`
	TrustedPages int64 `json:"trusted_pages"`
	Revision     int64 `json:"revision"`
}

type hit struct {
	Layer    string  `json:"layer"`
	Path     string  `json:"path"`
	SourceID int64   `json:"source_id"`
	Snippet  string  `json:"snippet"`
	Score    float64 `json:"score"`
	Line     int     `json:"line"`
}

type hits struct {
	Hits []hit `json:"hits"`
}

type source struct {
	ID        int64          `json:"id"`
	Content   string         `json:"content"`
	Authority map[string]any `json:"authority"`
	Revision  int64          `json:"revision"`
	CreatedAt string         `json:"created_at"`
}

type page struct {
	Path     string `json:"path"`
	Revision int64  `json:"revision"`
	Trusted  *struct {
		Content  string `json:"content"`
		SourceID int64  `json:"source_id"`
	} `json:"trusted"`
	Sources []source `json:"sources"`
}

type updated struct {
	SourceID int64  `json:"source_id"`
	Path     string `json:"path"`
	Revision int64  `json:"revision"`
}

func updateStampsAuthorityAndChecksRevision(t *testing.T, s sessions.Store) {
	h := newHarness(t, s)
	client := &tool.CallInfo{SessionID: "s1", Speaker: paired(t)}

	var st status
	h.decode(nil, "memory_status", map[string]any{}, &st)
	if st != (status{}) {
		t.Errorf("empty store status = %+v", st)
	}
	res := h.call(nil, "memory_update", map[string]any{"path": "p/a", "content": "x"})
	if !res.IsError || res.ReasonCode() != memory.ReasonNoAuthority {
		t.Errorf("memory_update without a caller = %+v, want NO_AUTHORITY", res)
	}
	var unmade authz.Speaker // no constructor made it
	res = h.call(&tool.CallInfo{Speaker: unmade}, "memory_update", map[string]any{"path": "p/a", "content": "x"})
	if !res.IsError || res.ReasonCode() != memory.ReasonNoAuthority {
		t.Errorf("memory_update with a speaker authz did not make = %+v, want NO_AUTHORITY", res)
	}

	var u1 updated
	h.decode(client, "memory_update", map[string]any{"path": "projects/op.md", "content": "The runtime uses Go.\nTea is served at four.", "base_revision": 0}, &u1)
	if u1.SourceID <= 0 || u1.Revision <= 0 || u1.Path != "projects/op.md" {
		t.Fatalf("memory_update = %+v", u1)
	}
	// A stale base revision conflicts and writes nothing.
	res = h.call(client, "memory_update", map[string]any{"path": "projects/op.md", "content": "stale", "base_revision": 0})
	if !res.IsError || res.ReasonCode() != memory.ReasonConflict || res.Details["current_revision"] != u1.Revision {
		t.Errorf("stale memory_update = %+v (%v), want CONFLICT at revision %d", res.Text(), res.Details, u1.Revision)
	}
	var u2 updated
	h.decode(client, "memory_update", map[string]any{"path": "projects/op.md", "content": "Coffee too.", "base_revision": u1.Revision}, &u2)
	var u3 updated
	h.decode(&tool.CallInfo{Speaker: owner(t)}, "memory_update", map[string]any{"path": "people/alice.md", "content": "Alice likes tea."}, &u3)

	var pg page
	h.decode(client, "memory_get", map[string]any{"path": "projects/op.md"}, &pg)
	if pg.Revision != u2.Revision || len(pg.Sources) != 2 || pg.Trusted != nil {
		t.Fatalf("memory_get = %+v, want 2 sources at revision %d", pg, u2.Revision)
	}
	wantAuth := map[string]any{
		"speaker_kind": "client", "speaker_id": "mcp/0123456789abcdef", "speaker_display": "MCP client",
		"principal_id": principal, "authority_tier": "paired", "interaction": "non-interactive", "source": "mcp",
	}
	if diff := cmp.Diff(wantAuth, pg.Sources[0].Authority); diff != "" {
		t.Errorf("source authority stamp (-want +got):\n%s", diff)
	}
	if pg.Sources[0].Content != "The runtime uses Go.\nTea is served at four." || pg.Sources[1].Content != "Coffee too." {
		t.Errorf("sources = %+v", pg.Sources)
	}
	h.decode(nil, "memory_status", map[string]any{}, &st)
	if st.Sources != 3 || st.Revision != u3.Revision {
		t.Errorf("status = %+v, want 3 sources at revision %d", st, u3.Revision)
	}
	res = h.call(client, "memory_get", map[string]any{"path": "nope"})
	if !res.IsError || res.ReasonCode() != memory.ReasonNotFound {
		t.Errorf("memory_get(nope) = %+v, want NOT_FOUND", res)
	}
}

func searchGrepBrowse(t *testing.T, s sessions.Store) {
	h := newHarness(t, s)
	who := &tool.CallInfo{Speaker: paired(t)}
	for _, src := range []struct{ path, content string }{
		{"notes/tea.md", "Green tea and black tea.\nOolong is a tea too."},
		{"notes/coffee.md", "Espresso, no tea here? Well, one mention of tea."},
		{"other/misc.md", "Nothing relevant."},
	} {
		var u updated
		h.decode(who, "memory_update", map[string]any{"path": src.path, "content": src.content}, &u)
	}
	var hs hits
	h.decode(who, "memory_search", map[string]any{"query": "oolong"}, &hs)
	if len(hs.Hits) != 1 || hs.Hits[0].Path != "notes/tea.md" || hs.Hits[0].Layer != sessions.LayerSource {
		t.Errorf("memory_search(oolong) = %+v", hs)
	}
	h.decode(who, "memory_search", map[string]any{"query": "tea", "top_k": 1}, &hs)
	if len(hs.Hits) != 1 {
		t.Errorf("memory_search(top_k 1) = %d hits", len(hs.Hits))
	}
	h.decode(who, "memory_search", map[string]any{"query": "tea", "path_prefix": "other/"}, &hs)
	if len(hs.Hits) != 0 {
		t.Errorf("memory_search with prefix other/ = %+v", hs)
	}
	h.decode(who, "memory_grep", map[string]any{"substring": "OOLONG"}, &hs)
	if len(hs.Hits) != 1 || hs.Hits[0].Line != 2 || hs.Hits[0].Path != "notes/tea.md" {
		t.Errorf("memory_grep(OOLONG) = %+v, want line 2 of notes/tea.md", hs)
	}
	h.decode(who, "memory_grep", map[string]any{"substring": "OOLONG", "case_sensitive": true}, &hs)
	if len(hs.Hits) != 0 {
		t.Errorf("case-sensitive memory_grep = %+v", hs)
	}
	h.decode(who, "memory_grep", map[string]any{"substring": "tea", "limit": 2}, &hs)
	if len(hs.Hits) != 2 {
		t.Errorf("memory_grep limit 2 = %d hits", len(hs.Hits))
	}
	var es struct {
		Entries []struct {
			Path    string `json:"path"`
			Sources int64  `json:"sources"`
			Trusted bool   `json:"trusted"`
		} `json:"entries"`
	}
	h.decode(who, "memory_browse", map[string]any{"prefix": "notes/"}, &es)
	var paths []string
	for _, e := range es.Entries {
		paths = append(paths, e.Path)
	}
	if diff := cmp.Diff([]string{"notes/coffee.md", "notes/tea.md"}, paths); diff != "" {
		t.Errorf("memory_browse(notes/) (-want +got):\n%s", diff)
	}
	res := h.call(who, "memory_search", map[string]any{"query": ""})
	if !res.IsError || res.ReasonCode() != tool.ReasonInvalidArguments {
		t.Errorf("memory_search(empty) = %+v, want INVALID_ARGUMENTS", res)
	}
}

func promoteOwnerOnly(t *testing.T, s sessions.Store) {
	h := newHarness(t, s)
	client := &tool.CallInfo{Speaker: paired(t)}
	own := &tool.CallInfo{Speaker: owner(t)}
	var u updated
	h.decode(client, "memory_update", map[string]any{"path": "facts/sky.md", "content": "The sky is blue."}, &u)

	// Defence in depth: called without the gate, a non-owner is still refused.
	for name, who := range map[string]*tool.CallInfo{"no caller": nil, "paired": client} {
		res := h.call(who, "memory_promote", map[string]any{"source_id": u.SourceID})
		want := authz.Decision{ReasonCode: authz.ReasonCapability, Capability: authz.CapMemoryTrustedPromote, Message: "memory_promote is for the owner only"}
		got, denied := res.Denial()
		if diff := cmp.Diff(want, got); diff != "" || !res.IsError || !denied || res.Reason != authz.ReasonCapability {
			t.Errorf("memory_promote as %s: IsError %v, denied %v (-want +got):\n%s", name, res.IsError, denied, diff)
		}
	}
	var st status
	h.decode(nil, "memory_status", map[string]any{}, &st)
	if st.TrustedPages != 0 {
		t.Fatalf("a refused promote created a trusted page")
	}
	// Through the gate as an MCP client: denied before the tool runs.
	tl, _ := h.reg.Get("memory_promote")
	res := h.ex.Run(context.Background(), tl, tool.Call{ID: "c", Args: json.RawMessage(`{"source_id":1}`),
		Guard: gate.Guard(tl, paired(t), nil)})
	if !res.IsError || res.ReasonCode() != authz.ReasonCapability {
		t.Errorf("gated memory_promote = %+v, want AUTHORITY_CAPABILITY_DENIED", res)
	}

	res = h.call(own, "memory_promote", map[string]any{"source_id": u.SourceID, "base_revision": 0})
	if !res.IsError || res.ReasonCode() != memory.ReasonConflict {
		t.Errorf("memory_promote with a stale base = %+v, want CONFLICT", res)
	}
	var p struct {
		Path     string `json:"path"`
		SourceID int64  `json:"source_id"`
		Revision int64  `json:"revision"`
	}
	h.decode(own, "memory_promote", map[string]any{"source_id": u.SourceID, "base_revision": u.Revision}, &p)
	if p.Path != "facts/sky.md" || p.SourceID != u.SourceID || p.Revision <= u.Revision {
		t.Errorf("memory_promote = %+v", p)
	}
	var pg page
	h.decode(client, "memory_get", map[string]any{"path": "facts/sky.md"}, &pg)
	if pg.Trusted == nil || pg.Trusted.Content != "The sky is blue." || pg.Trusted.SourceID != u.SourceID {
		t.Errorf("memory_get after promote = %+v", pg)
	}
	var hs hits
	h.decode(client, "memory_search", map[string]any{"query": "sky"}, &hs)
	layers := map[string]bool{}
	for _, x := range hs.Hits {
		layers[x.Layer] = true
	}
	if !layers[sessions.LayerTrusted] || !layers[sessions.LayerSource] {
		t.Errorf("memory_search after promote = %+v, want both layers", hs)
	}
	res = h.call(own, "memory_promote", map[string]any{"source_id": 999999})
	if !res.IsError || res.ReasonCode() != memory.ReasonNotFound {
		t.Errorf("memory_promote(unknown) = %+v, want NOT_FOUND", res)
	}
}
