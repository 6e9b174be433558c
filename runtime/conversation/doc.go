// Package conversation is a speaker's conversation with the host, owned
// once: the MCP server is an adapter over it, the owner's console a view
// of it, and a durable task's runner calls it directly.
//
//	svc, _ := conversation.New(conversation.Options{Store: store, Runtime: rt, Questions: qs})
//	line, _ := svc.Open(speaker, nil) // authz.NewMCPClient or authz.NewOwner
//	defer line.Close(conversation.ReasonConnectionClosed)
//	turn := line.NewTurn(requestID, "", "What changed since Friday?") // "": a new session
//	if err := line.Admit(ctx, turn); err != nil {
//		return err // ErrAuditUnavailable: nothing ran
//	}
//	reply, err := line.Send(ctx, turn, conversation.SendOptions{Observe: progress})
//
// A [Line] is one speaker's: one MCP connection, one console, one task
// runner. Its turns are admitted first (an MCP client's request record is
// written before anything of the turn happens, and a refused append
// refuses the turn), then run by the runtime with the line's speaker, whole, at the
// turn's commit point ([runtime.Commit]): a cancel ([Line.CancelSession],
// [Line.Cancel], [Line.Close], or the request's context ending) and the
// turn's final write never both win. The line creates the sessions its
// turns need ([Line.Send] is the one place a session is created), writes
// its speaker's audit records (below), declines the questions of a speaker
// nobody can ask, and lets the owner answer approvals ([Line.Approve],
// standing approvals through [StandingApprovals]). A direct tool call
// ([Line.CallTool]) takes the runtime's one tool path with the line's
// speaker.
//
// Every front end follows a turn through its own observer
// ([SendOptions.Observe]): no process-wide bus, no filtering by request id.
//
// What each speaker records differs by data, not by code: an MCP client's
// turn writes mcp.prompt.requested, mcp.prompt.completed or
// mcp.request.cancelled, and mcp.tool.denied for each denial in it; its
// direct call writes mcp.tool.requested and, when denied, mcp.tool.denied.
// The owner's console writes owner.session.created and owner.approval.
// The origin of every record is the speaker's id; no payload holds prompt
// text, message content or tool arguments. With [AuditRefuse] (the
// default) a request whose record cannot be written is refused
// ([ErrAuditUnavailable]) before anything of it runs.
package conversation
