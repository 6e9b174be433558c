// Package memory implements the memory tools over a sessions.Store:
// memory_status, memory_search, memory_grep, memory_get, memory_browse,
// memory_update and memory_promote.
//
//	for _, t := range memory.Tools(store) {
//		if err := reg.Register(t); err != nil {
//			return err
//		}
//	}
//
// Results are compact JSON objects. memory_update appends a source
// stamped with the caller's six authority fields and source (its speaker,
// from tool.CallInfo; a call without a speaker authz made is refused), with
// optional optimistic concurrency through base_revision (a stale revision
// is a CONFLICT naming the current one). memory_promote is for the owner
// only: the gate checks the capability, and the tool refuses any other
// caller itself as well.
package memory
