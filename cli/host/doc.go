// Package host is the one composition root of OpenProgram: it builds the
// runtime once from one typed [Config] and hands out speakers. `openprogram
// mcp serve`, `openprogram chat` and `openprogram prompt` are thin front ends
// over it; what differs between them is data (the [Speaker]), not a second
// copy of the wiring.
//
//	h, err := host.Open(ctx, cfg, &host.Options{Getenv: os.Getenv, Version: "v1.2.3"})
//	if err != nil {
//		return err
//	}
//	defer h.Close()
//	owner, err := h.Owner(host.OwnerOptions{Interactive: false, WorkDir: wd})
//	...
//	res, err := h.Runtime().ProcessUserTurn(ctx, runtime.TurnRequest{Request: owner.Request, ...})
//
// # What the host decides
//
//   - The store: [OpenStore] opens the configured store with the audit key
//     of the state directory (created on first use); every front end that
//     writes opens it there.
//   - The runtime: the built-in tool registry, the event bus, the question
//     registry, the model provider (a configuration that cannot work leaves
//     the runtime without one, and its turns fail with a text naming the keys
//     to set: [Host.ProviderErr]) and the executor, built once in [Open].
//   - The speakers: [Host.MCPClient] (paired, non-interactive, the MCP
//     client's fixed authority) and [Host.Owner] (the owner tier, interactive
//     or not). Every speaker's request carries the state directory, so the
//     file tools and bash never write it, whoever speaks
//     (authz.Request.WriteTarget).
//   - Standing approvals: the owner's "allow for this session" is kept per
//     session in the store ([Host.AllowForSession], the owner's speaker
//     only) and answers the gate's question for the owner's later calls of
//     that tool in that session, interactive or not, after audit; an MCP
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
