// Package questions tracks the questions the runtime asks a person: free
// answers (ask), yes/no (confirm) and tool approvals (approval).
//
//	reg := questions.New(&questions.Options{Bus: bus})
//	ans, err := reg.Ask(ctx, questions.Question{SessionID: sid, Kind: questions.KindConfirm, Prompt: "Deploy now?"})
//	if err == nil && ans.Approved() {
//		// go ahead
//	}
//
// Every question is resolved exactly once, by the first of: an answer
// ([Registry.Resolve], claim-once), a decline, its context ending
// (cancelled), its timeout (default 300 s) or [Registry.CancelSession],
// which declines every pending question of one session; this is what the
// MCP server does for a session with an active MCP request (docs/contract.md
// section 7). Registering publishes question.asked with question_id, kind
// and session_id; resolving publishes question.resolved.
package questions
