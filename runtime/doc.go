// Package runtime runs OpenProgram's model-driven agent turns: it takes a
// session's turn lease, builds the model's history from the active branch,
// stores the user message, loops model -> gated tools -> model, stores the
// reply and moves the head, and reports progress to the turn's observer.
//
//	store, _ := sessions.Open(ctx, "sqlite:/home/me/.openprogram/openprogram.db")
//	reg := tool.NewRegistry()
//	_ = builtin.Register(reg, builtin.Deps{Store: store})
//	p, perr := runtime.NewProvider(provider.Config{Provider: "openai", Model: "gpt-4o-mini"}, os.Getenv)
//	rt := runtime.New(runtime.Options{Store: store, Registry: reg, Questions: qs,
//		Provider: p, ProviderErr: perr, SystemPrompt: cfg.SystemPrompt})
//
//	client, _ := authz.NewMCPClient(clientID, principalID,
//		authz.Scope{Rules: rules, WorkDirs: []string{"/home/me/project"}})
//	res, err := rt.ProcessUserTurn(ctx, runtime.TurnRequest{
//		SessionID: "mcp_0123", Text: "What do my notes say about the release?",
//		AgentID: "main", RequestID: "42", Speaker: client,
//		Observe: func(e events.Event) { /* progress */ },
//	})
//	switch {
//	case errors.Is(err, sessions.ErrBusy): // another turn runs on the session
//	case errors.Is(err, context.Canceled): // cancelled: only the user message was stored
//	case err != nil: // invalid request or store failure
//	case res.Failed: // res.Text says why (res.ErrorClass); it is stored too
//	default: // res.Text is the answer
//	}
//
// # Authority
//
// A [TurnRequest] carries the speaker (authz.Speaker), made and checked by
// authz alone and used whole: for the tools offered to the model (those
// whose capability the tier holds) and for the gate in front of every tool
// call. The turn re-checks no field of it and refuses a speaker authz did
// not make; nothing in the request can raise the tier. The user message is
// stored with the authority in its [Metadata]; a non-owner's text reaches
// the model as a JSON speaker envelope
// {"speaker_kind","speaker_id","speaker_display","content"}, and the system
// prompt ends with [SpeakerNote], so a paired client cannot pose as the
// owner.
//
// # Cancellation
//
// Cancelling the context passed to [Runtime.ProcessUserTurn] stops the turn
// at once: no model call, tool execution or message write happens after the
// cancel is seen; the in-flight HTTP request and running tools are cancelled
// (bash kills its process group); a model answer arriving late is
// discarded; the session's pending questions are declined; the lease is
// released with a fresh context. The user message stays, no assistant
// message is written, and the error matches the context's error.
//
// # Failures
//
// A turn that cannot get a model answer — no provider configured, a
// provider error after retries, the step limit — stores an assistant
// message holding the failure text (Metadata.Failed) and returns a
// [TurnResult] with Failed set and a nil error. Failure texts are never sent
// back to the model.
//
// # Events
//
// To TurnRequest.Observe, one at a time and in order, each with its payload
// struct from package events:
// turn.start (TurnStartData); turn.text (TextData: every streamed fragment
// of assistant text with the running character count; consumers coalesce);
// tool.start (ToolStartData) and tool.end (ToolEndData, with Denied for a
// gate denial) around every tool call, question.asked (QuestionData) when
// the gate asks the owner, approval.standing (StandingData) when a standing
// approval answers; turn.end (TurnEndData), after the lease is released.
// No event holds user text or tool arguments.
//
// # Tool calls
//
// [Runtime.RunTool] runs one tool call for an authz.Speaker: registry,
// gate, argument check and executor, in one place. The turn loop calls it
// for every tool the model asks for; runtime/conversation calls it for a
// direct call (Line.CallTool, MCP tool_call). [ToolCall.Observe] hears the
// call's events.
//
// # Conversations
//
// Front ends do not call [Runtime.ProcessUserTurn] themselves: package
// [github.com/openprogram/openprogram/runtime/conversation] owns a
// speaker's conversation (admission and its audit record, the session it
// creates, the commit point, cancels, denials, approvals) and runs the
// turns.
//
// # Providers
//
// [NewProvider] turns the model section of config.json into a provider (see
// package [github.com/openprogram/openprogram/runtime/provider]); a
// configuration that cannot work is a [*ConfigError] naming the keys to
// set, and with no provider every turn fails with that text.
package runtime
