// Package storetest is the conformance suite for [sessions.Store]
// backends. Every backend runs it from its own tests:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) sessions.Store {
//			st, err := mybackend.Open(t.Context(), freshDatabaseURL(t))
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { st.Close() })
//			return st
//		},
//			storetest.WithSecondHandle(secondHandleOnSameDatabase),
//			storetest.WithTamperer(rawAuditTableAccess))
//	}
//
// The suite covers every Store method: sessions (ordering, limits,
// archived), the message tree (forks, head moves, unknown heads, deep
// branches, concurrent appends), turn leases between two handles (expiry
// and takeover), memory (revisions, conflicts, ranked search, prefix
// filters, grep) and the audit chain (an edited, deleted, truncated and
// swapped record are each caught).
package storetest
