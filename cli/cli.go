package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/alecthomas/kong"
	"github.com/openprogram/openprogram/cli/internal/clients"
	"github.com/openprogram/openprogram/cli/internal/console"
	"github.com/openprogram/openprogram/cli/internal/grammar"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// ExitError ends a command with a specific exit code. Its message, when not
// empty, has already been printed.
type ExitError int

func (e ExitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// App carries what every command needs: the process's standard streams, its
// environment and the build version. Commands receive it through kong.Bind.
type App struct {
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	Env     Env
	Version string
	// Commit and Date identify the build ("" = unknown).
	Commit, Date string
	// Executable is the absolute path of the running binary ("" = unknown).
	Executable string
	// Logger writes diagnostics to Stderr. Nothing but command output goes to Stdout.
	Logger *slog.Logger
}

// StateDir resolves the state directory from the app's environment.
func (a *App) StateDir() (string, error) { return StateDir(a.Env) }

// root is the command grammar.
type root struct {
	VersionFlag kong.VersionFlag `name:"version" help:"Print the version, commit, build date and Go version, and exit."`
	Home        string           `name:"home" env:"OPENPROGRAM_HOME" placeholder:"DIR" help:"The state directory (default ~/.openprogram)."`
	Profile     string           `name:"profile" env:"OPENPROGRAM_PROFILE" placeholder:"NAME" help:"Use ~/.openprogram-NAME as the state directory."`

	Help       helpCmd       `cmd:"" hidden:"" help:"Show help."`
	Completion completionCmd `cmd:"" help:"Print a shell completion script: bash, zsh, fish or powershell."`
	MCP        mcpCmd        `cmd:"" name:"mcp" help:"Serve OpenProgram to MCP clients over stdio, and manage its token."`
	Chat       chatCmd       `cmd:"" help:"Talk to your agent in the terminal, as its owner, approving tools as it asks."`
	Prompt     promptCmd     `cmd:"" help:"Send one prompt as the owner and print the reply (approvals are denied)."`
	Config     configCmd     `cmd:"" help:"Read and change config.json in the state directory."`
	Sessions   sessionsCmd   `cmd:"" help:"List and show stored sessions."`
	Tools      toolsCmd      `cmd:"" help:"List the runtime tools."`
	Audit      auditCmd      `cmd:"" help:"Read and verify the audit log."`
	Doctor     doctorCmd     `cmd:"" help:"Check the installation and say how to fix what is wrong."`
	Version    versionCmd    `cmd:"" help:"Print the version."`
	Man        manCmd        `cmd:"" hidden:"" help:"Print the manual page (roff), as make dist puts it in the release archive."`
}

type kongExit struct{ code int }

// Main runs the openprogram command line with args (without the program name)
// and returns the process exit code: 0 ok, 1 failure, 2 usage.
func Main(ctx context.Context, app *App, args []string) (code int) {
	if app.Logger == nil {
		app.Logger = slog.New(slog.NewTextHandler(app.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	var cmd root
	parser, err := newParser(ctx, app, &cmd)
	if err != nil {
		fmt.Fprintf(app.Stderr, "Error: build the command line: %v\n", err)
		return ExitFailure
	}
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(kongExit)
			if !ok {
				panic(r)
			}
			code = e.code
		}
	}()
	kctx, err := parser.Parse(grammar.NegativeValues(args))
	if err != nil {
		return parseFailed(app, err)
	}
	// The global flags win over the environment they default from.
	if cmd.Home != "" {
		app.Env = append(Env{EnvHome + "=" + cmd.Home}, app.Env...)
	}
	if cmd.Profile != "" {
		app.Env = append(Env{EnvProfile + "=" + cmd.Profile}, app.Env...)
	}
	if err := kctx.Run(); err != nil {
		var exit ExitError
		if errors.As(err, &exit) {
			return int(exit)
		}
		var usage usageError
		if errors.As(err, &usage) {
			fmt.Fprintf(app.Stderr, "Error: %s\n", console.OneLine(err.Error()))
			return ExitUsage
		}
		fmt.Fprintf(app.Stderr, "Error: %s\n", console.OneLine(err.Error()))
		return ExitFailure
	}
	return ExitOK
}

// description is the top of --help: what the program is, and the
// environment variables that have no flag (secrets stay out of argv).
const description = `OpenProgram: an agent runtime served to MCP clients over authenticated stdio.

Quick start: openprogram mcp token create, then openprogram mcp install --client <client>.

Environment (besides the flags' own):
  OPENPROGRAM_MCP_TOKEN     the token mcp serve requires (never a flag: argv is visible to others)
  OPENPROGRAM_DATABASE_URL  a postgres:// store URL, overriding store.url (it may hold a password)
  OPENAI_API_KEY, ANTHROPIC_API_KEY, or the variable model.api_key_env names: the model key`

// newParser builds the kong parser for cmd. Flags with env tags read app.Env
// (not the process environment), so tests and callers stay in control.
func newParser(ctx context.Context, app *App, cmd *root) (*kong.Kong, error) {
	return kong.New(cmd,
		kong.Name("openprogram"),
		kong.Description(description),
		kong.Writers(app.Stdout, app.Stderr),
		kong.Exit(func(c int) { panic(kongExit{c}) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.Vars{"version": versionText(app), "clients": strings.Join(clients.Names(), ",")},
		kong.Resolvers(kong.ResolverFunc(func(_ *kong.Context, _ *kong.Path, f *kong.Flag) (any, error) {
			if len(f.Envs) == 0 {
				return nil, nil
			}
			for _, e := range f.Envs {
				if v, ok := app.Env.Lookup(e); ok {
					return v, nil
				}
			}
			// Not in app.Env: whatever the process environment held does not count.
			return f.Default, nil
		})),
		kong.Bind(app),
		kong.BindTo(ctx, (*context.Context)(nil)),
	)
}

// parseFailed reports a command-line mistake: the usage of the command
// group it stopped at (a bare call, `mcp token`, an unknown command), then
// one Error line that says where to look. Exit 2.
func parseFailed(app *App, err error) int {
	var perr *kong.ParseError
	if errors.As(err, &perr) && perr.Context != nil {
		node := perr.Context.Selected()
		if node == nil {
			node = perr.Context.Model.Node
		}
		if grammar.ShowUsage(node, perr.Context.Args) {
			perr.Context.Stdout = app.Stderr
			_ = perr.Context.PrintUsage(false)
			fmt.Fprintln(app.Stderr)
		}
		path := "openprogram"
		if node.Type == kong.CommandNode {
			path += " " + node.Path()
		}
		fmt.Fprintf(app.Stderr, "Error: %s (see: %s --help)\n", console.OneLine(err.Error()), path)
		return ExitUsage
	}
	fmt.Fprintf(app.Stderr, "Error: %s\n", console.OneLine(err.Error()))
	return ExitUsage
}

// usageError marks an error as a usage mistake (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }
