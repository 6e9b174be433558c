package builtin

import (
	"cmp"
	"fmt"
	"log/slog"

	"github.com/openprogram/openprogram/runtime/builtin/bash"
	"github.com/openprogram/openprogram/runtime/builtin/files"
	"github.com/openprogram/openprogram/runtime/builtin/memory"
	"github.com/openprogram/openprogram/runtime/builtin/todo"
	"github.com/openprogram/openprogram/runtime/secretenv"
	"github.com/openprogram/openprogram/runtime/tool"
	"github.com/openprogram/openprogram/sessions"
)

// Deps is what the built-in tools need. Per-call facts (session, caller
// authority, working directories of the call) travel in tool.CallInfo.
type Deps struct {
	// Store backs the memory tools; nil leaves them out.
	Store sessions.Store
	// WorkDirs confine the file tools and give bash its directory when a
	// call carries none.
	WorkDirs []string
	// StateDir is the state directory: the file tools refuse writes into
	// it from every speaker wherever it is (files.Options.StateDir), and
	// bash refuses to run with its working directory inside it
	// (bash.Options.StateDir).
	StateDir string
	// Logger receives the file tools' debug records (the full resolution
	// behind a refused path, files.Options.Logger). Nil discards.
	Logger *slog.Logger
	// Todos keeps the todo lists (nil: a new in-memory store).
	Todos *todo.Store
	// Secrets are the environment variables no tool's subprocess may see
	// (runtime.SecretEnv of the configuration); bash always gets them,
	// whatever Bash says.
	Secrets secretenv.List
	// Files and Bash tune those tools (nil: defaults). Their WorkDirs (and
	// the files' StateDir and Logger), if empty, are taken from Deps.
	Files *files.Options
	Bash  *bash.Options
}

// Register adds the built-in tools to reg, in this order: the memory
// tools (when Deps.Store is set), read, write, edit, apply_patch, glob,
// grep, list, bash, todo_create, todo_update, todo_list. It stops at the
// first registration error (a duplicate name, for instance).
func Register(reg *tool.Registry, deps Deps) error {
	var ts []tool.Tool
	if deps.Store != nil {
		ts = append(ts, memory.Tools(deps.Store)...)
	}
	fo := valueOf(deps.Files)
	fo.WorkDirs = dirsOr(fo.WorkDirs, deps.WorkDirs)
	fo.StateDir = cmp.Or(fo.StateDir, deps.StateDir)
	fo.Logger = cmp.Or(fo.Logger, deps.Logger)
	ts = append(ts, files.Tools(&fo)...)
	bo := valueOf(deps.Bash)
	bo.WorkDirs = dirsOr(bo.WorkDirs, deps.WorkDirs)
	bo.StateDir = cmp.Or(bo.StateDir, deps.StateDir)
	bo.Secrets = deps.Secrets
	ts = append(ts, bash.New(&bo))
	todos := deps.Todos
	if todos == nil {
		todos = todo.NewStore()
	}
	ts = append(ts, todo.Tools(todos)...)
	for _, t := range ts {
		if err := reg.Register(t); err != nil {
			return fmt.Errorf("register built-in tools: %w", err)
		}
	}
	return nil
}

// valueOf is *p, or the zero T for nil.
func valueOf[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// dirsOr is dirs, or def when dirs is empty.
func dirsOr(dirs, def []string) []string {
	if len(dirs) == 0 {
		return def
	}
	return dirs
}
