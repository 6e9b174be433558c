// Package gate puts the authorization gate (docs/contract.md section 3) in front
// of a runtime tool.
//
//	client, _ := authz.NewMCPClient(clientID, principalID, authz.Scope{WorkDirs: []string{"/home/me/project"}})
//	guard := gate.Guard(t, client, &gate.Options{SessionID: sessionID})
//	res := executor.Run(ctx, t, tool.Call{ID: callID, Args: args, Update: update, Guard: guard})
//	if d, denied := res.Denial(); denied { ... }
//
// runtime.Runtime.RunTool is the one caller outside tests: it assembles
// gate and executor for the turn loop and for MCP tool_call alike.
//
// The guard runs [authz.Decide] for the speaker before every call and never
// lets the tool run on a denial. A denial is a result with IsError set, the
// decision's message as text, the decision in tool.Result.Denied and its
// reason code in tool.Result.Reason. Beyond Decide, the gate also requires
// the tier to hold the capability the tool itself declares. A tool that
// runs gets a tool.CallInfo with the speaker, whole.
//
// [Options.Standing] lets a standing approval answer a call that lacks
// nothing but the speaker's approval; the gate then reports
// approval.standing to [Options.Observe].
//
// A decision that needs approval (an interactive owner, a tool off the
// safe list) asks an approval question through [Options.Questions] and
// runs the tool only when the answer is allow (question.asked goes to
// [Options.Observe] first, so a console can ask); without a question
// registry it is denied. MCP requests are non-interactive, so for them
// Decide denies at once and no question is ever opened.
package gate
