// Package sessions is where OpenProgram keeps users' data: sessions and
// their message trees, per-session turn leases, the two-layer memory
// (appended sources and owner-promoted trusted pages) and the hash-chained
// audit log, behind one [Store] interface; and durable MCP tasks, behind
// [TaskStore], which both backends implement too.
//
// Backends live in sub-packages and register a URL scheme when imported,
// like database/sql drivers:
//
//	import (
//		"github.com/openprogram/openprogram/sessions"
//		_ "github.com/openprogram/openprogram/sessions/sqlite"
//	)
//
//	st, err := sessions.Open(ctx, "sqlite:"+filepath.Join(stateDir, "openprogram.db"))
//	if err != nil {
//		return err
//	}
//	defer st.Close()
//	s, err := st.CreateSession(ctx, sessions.Session{ID: "mcp_0123", Title: "hello"})
//	msgs, err := st.AppendMessages(ctx, s.ID, s.HeadID, []sessions.NewMessage{
//		{Role: sessions.RoleUser, Content: "hi"},
//		{Role: sessions.RoleAssistant, Content: "hello!"},
//	}, true) // one transaction: both messages and the head move, or nothing
//
// # Message tree
//
// Messages form a tree. A session's head names the last message of the
// active branch; [Store.Branch] returns the chain from the root to the head.
// [Store.AppendMessages] writes a whole turn (user, tool and assistant
// messages, head move, updated_at) in one transaction, so a crash leaves
// either the old head or the new one.
//
// # Turn lease
//
// [Store.AcquireTurn] gives one owner (a process and turn) the right to run
// a turn on a session, across processes sharing the database. Others get
// [ErrBusy] until it is released or its TTL passes without renewal.
//
// # Memory
//
// Sources are appended and never change; promoting a source copies its
// content to the trusted page at the same path. Every append and promotion
// takes the next value of one global revision counter; a path's revision is
// the newest revision among its sources and trusted page, and writers pass
// it back as baseRevision for optimistic concurrency ([ErrConflict]).
//
// # Audit
//
// Audit records form a SHA-256 hash chain; the chain head is stored apart
// from the records and updated in the same transaction, so
// [Store.VerifyAudit] detects an edited, deleted (tail included) or
// reordered record.
//
// # Conformance
//
// Package storetest is the conformance suite every backend passes.
package sessions
