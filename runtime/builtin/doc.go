// Package builtin registers the runtime's built-in tools.
//
//	reg := tool.NewRegistry()
//	err := builtin.Register(reg, builtin.Deps{Store: store, WorkDirs: []string{"/home/me/project"}})
//
// The tools live in subpackages: [memory] (memory_status, memory_search,
// memory_grep, memory_get, memory_browse, memory_update, memory_promote),
// [files] (read, write, edit, apply_patch, glob, grep, list), [bash] and
// [todo] (todo_create, todo_update, todo_list). Each tool declares the
// capability docs/contract.md section 3 assigns to its name; per-call facts
// (the session, and the caller's authz.Speaker: authority, working
// directories, state directory) come from tool.CallInfo in the call's
// context.
//
// [memory]: https://pkg.go.dev/github.com/openprogram/openprogram/runtime/builtin/memory
// [files]: https://pkg.go.dev/github.com/openprogram/openprogram/runtime/builtin/files
// [bash]: https://pkg.go.dev/github.com/openprogram/openprogram/runtime/builtin/bash
// [todo]: https://pkg.go.dev/github.com/openprogram/openprogram/runtime/builtin/todo
package builtin
