// Package host is the one composition root of OpenProgram: it builds the
// runtime and its conversation service once from one typed [Config] and
// hands out speakers. `openprogram mcp serve`, `openprogram chat` and
// `openprogram prompt` are thin front ends over it; what differs between
// them is data (the authz.Speaker), not a second copy of the wiring.
//
//	h, err := host.Open(ctx, cfg, &host.Options{Getenv: os.Getenv, Version: "v1.2.3"})
//	if err != nil {
//		return err
//	}
//	defer h.Close()
//	owner, err := h.Owner(host.OwnerOptions{Interactive: false, WorkDir: wd})
//	...
//	line, err := h.Conversations().Open(owner, &conversation.LineOptions{Via: "prompt"})
//	...
//	defer line.Close(conversation.ReasonConnectionClosed)
//	turn := line.NewTurn(requestID, "", text) // "": a new session
//	if err := line.Admit(ctx, turn); err != nil {
//		return err
//	}
//	reply, err := line.Send(ctx, turn, conversation.SendOptions{Observe: view})
//
// # What the host decides
//
//   - The store: [OpenStore] opens the configured store with the audit key
//     of the state directory (created on first use); every front end that
//     writes opens it there.
//   - The runtime: the built-in tool registry, the question registry, the
//     model provider (a configuration that cannot work leaves the runtime
//     without one, and its turns fail with a text naming the keys to set:
//     [Host.ProviderErr]) and the executor, built once in [Open]. A turn's
//     events go to that turn's observer; there is no shared event bus.
//   - The conversations: one runtime/conversation service over the runtime
//     ([Host.Conversations]), with audit.on_failure. Every front end opens a
//     line of it for its speaker: its turns are admitted, run, cancelled and
//     audited there, and its sessions created there.
//   - The speakers: [Host.MCPClient] (authz.NewMCPClient: paired,
//     non-interactive, the MCP client's fixed authority) and [Host.Owner]
//     (authz.NewOwner: the owner tier, interactive or not), both an
//     authz.Speaker with the permission rules, the working directories and
//     the state directory, so the file tools and bash never write the
//     state directory, whoever speaks (authz.Speaker.WriteTarget).
//   - Standing approvals: the owner's "allow for this session" is kept per
//     session in the store (conversation.Line.Approve, the owner's speaker
//     only) and answers the gate's question for the owner's later calls of
//     that tool in that session, interactive or not, after audit
//     (conversation.StandingApprovals, the runtime's StandingFunc); an MCP
//     client's calls never read them.
//   - Durable MCP tasks (mcp_server.tasks.*): [Host.MCPServer] offers them
//     when the front end passes [Options.StartTask], which launches a task's
//     runner; the runner calls [Host.RunTask] with the task's client, which
//     must still be the paired one; [Host.SweepTasks] fails the tasks whose
//     runner is gone and purges the expired ones.
//
// The configuration is parsed and validated once, by the loader of the
// `openprogram` command (config.json, the environment and flags); the host
// takes the typed values and does not check them again.
package host
