// Package bash implements the bash tool: `bash -c <command>` in the first
// working directory, in its own process group.
//
//	t := bash.New(&bash.Options{WorkDirs: []string{"/home/me/project"}})
//	res := executor.Execute(ctx, t, "call-1", json.RawMessage(`{"command":"go test ./...","timeout_ms":120000}`), onLine)
//
// Output (stdout and stderr interleaved) streams line by line through the
// update callback; the result holds the output (head and tail when long)
// and the exit code, and a non-zero exit is an IsError result. On timeout
// (default 30 s, at most 10 min) or cancellation the whole process group
// gets SIGTERM and, after a grace period, SIGKILL, so no child or
// grandchild survives; by default whatever the command left running in
// its group is terminated when it exits too. The output pipe is drained
// with a bound, so a process that escaped the group (setsid) cannot hang
// the call.
//
// On Windows the shell is Git for Windows' bash.exe when found, else pwsh,
// else powershell.exe (Options.Shell overrides; the description names it),
// and the process tree is a kill-on-close Job Object the command is put in
// before its first instruction (it is created suspended).
//
// The environment is inherited without secrets: Options.Secrets (a
// secretenv.List: the fixed names, every *_API_KEY, and what the caller's
// configuration names) is removed from it.
package bash
