// Package authz decides who is talking to OpenProgram and what they may do. It is small,
// pure (apart from reading filesystem metadata to resolve paths and the one owner.json
// file), uses only the standard library, and fails closed everywhere.
//
//	principal, err := authz.LoadOrCreateOwnerPrincipal(stateDir)
//	if err != nil {
//		return err
//	}
//	rules, err := authz.ParseRules(cfg.PermissionRules)
//	if err != nil {
//		return err // names the malformed rule
//	}
//	client, err := authz.NewMCPClient(clientID, principal,
//		authz.Scope{Rules: rules, WorkDirs: []string{workDir}, StateDir: stateDir})
//	if err != nil {
//		return err // a malformed id or a relative directory: no speaker
//	}
//	d := authz.Decide(client, "write", json.RawMessage(`{"path":"notes.txt","content":"hi"}`))
//	if !d.Allowed {
//		// d.ReasonCode says why, d.Message says it in words; the tool must not run.
//	}
//
// # Tiers and capabilities
//
// A [Tier] holds a fixed set of [Capability] values (see [Capabilities]); [TierPaired]
// holds only reply, memory.read and memory.source.append and never grows. Every tool
// needs one capability ([ToolCapability]); unclassified tools need process.exec, which
// only the owner holds.
//
// # Speakers
//
// A [Speaker] is one party that talks to the runtime: its [Authority] (the six
// fields that describe it), its source, its permission mode and its [Scope] (the
// permission rules, the working directories and the state directory). Only
// [NewMCPClient] (source mcp, the paired, non-interactive authority of one MCP
// client) and [NewOwner] (source cli, the owner tier, interactive or not) make one,
// and they check every field there, once: a malformed client id or principal is
// refused ([ErrInvalidAuthority]) instead of made up, a relative directory too
// ([ErrInvalidSpeaker]). Everything downstream holds the Speaker whole and checks
// nothing again; a zero Speaker, or one no constructor made, is not
// [Speaker.Valid], and [Decide] allows it nothing.
//
// # The gate
//
// [Decide] runs the five steps of docs/contract.md section 3 in order, first match wins:
// hard constraints (every source but [SourceCLI]; for it, only the protected write
// targets of [Speaker.WriteTarget]), the tier's capability, deny and ask
// rules, allow rules and safe tools ([IsSafeTool]), and approval. A non-interactive
// speaker never gets [Decision.NeedsApproval]: it gets [ReasonApprovalUnavailable] at
// once.
//
// # Paths
//
// [Confine] is the one resolution of a tool's target path: [ResolvePath] (absolute, with
// symlinks resolved the way the kernel walks them; for a missing file, through its deepest
// existing ancestor), then inside the working directories ([InsideWorkDirs]). The hard
// constraints check every write target, including every target of an apply_patch envelope
// ([ParsePatch], [PatchTargets]), with [Speaker.WriteTarget], which adds the state
// directory ([Speaker.StateDir], for every speaker) and [IsDangerousPath] (for the owner,
// unless an allow rule names that exact path). Runtime file tools resolve with the same functions
// and work through an [os.Root] on [Target.WorkDir], so the checked path is the one used.
// A refusal is a [*PathError] whose text names the path as given and one fixed phrase
// ([PhraseOutside], ...); the full resolution is only in [PathError.Detail], for a debug
// log ([Speaker.WithLogger]).
//
// # Permission rules
//
// A [Rule] is {"tool": "name" or "name(pattern)", "action": "allow"|"ask"|"deny"}.
// [ParseRules] (the config value) and [NewRules] check and compile a list once into
// [Rules], which a [Scope] carries: a malformed rule is an error there, never a
// surprise at call time. See the README for the matching rules in plain words.
//
// The package builds on Unix only (owner.json checks use O_NOFOLLOW and the file owner).
package authz
