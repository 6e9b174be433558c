package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/alecthomas/kong"
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
	// Executable is the absolute path of the running binary ("" = unknown).
	Executable string
	// Logger writes diagnostics to Stderr. Nothing but command output goes to Stdout.
	Logger *slog.Logger
}

// StateDir resolves the state directory from the app's environment.
func (a *App) StateDir() (string, error) { return StateDir(a.Env) }

// root is the command grammar.
type root struct {
	MCP      mcpCmd      `cmd:"" name:"mcp" help:"Serve OpenProgram to MCP clients over stdio, and manage its token."`
	Chat     chatCmd     `cmd:"" help:"Talk to your agent in the terminal, as its owner, approving tools as it asks."`
	Prompt   promptCmd   `cmd:"" help:"Send one prompt as the owner and print the reply (approvals are denied)."`
	Config   configCmd   `cmd:"" help:"Read and change config.json in the state directory."`
	Sessions sessionsCmd `cmd:"" help:"List and show stored sessions."`
	Tools    toolsCmd    `cmd:"" help:"List the runtime tools."`
	Audit    auditCmd    `cmd:"" help:"Read and verify the audit log."`
	Doctor   doctorCmd   `cmd:"" help:"Check the installation and say how to fix what is wrong."`
	Version  versionCmd  `cmd:"" help:"Print the version."`
}

type kongExit struct{ code int }

// Main runs the openprogram command line with args (without the program name)
// and returns the process exit code: 0 ok, 1 failure, 2 usage.
func Main(ctx context.Context, app *App, args []string) (code int) {
	if app.Logger == nil {
		app.Logger = slog.New(slog.NewTextHandler(app.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	var cmd root
	parser, err := kong.New(&cmd,
		kong.Name("openprogram"),
		kong.Description("OpenProgram: an agent runtime served to MCP clients over authenticated stdio."),
		kong.Writers(app.Stdout, app.Stderr),
		kong.Exit(func(c int) { panic(kongExit{c}) }),
		kong.UsageOnError(),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.Bind(app),
		kong.BindTo(ctx, (*context.Context)(nil)),
	)
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
	kctx, err := parser.Parse(args)
	if err != nil {
		fmt.Fprintf(app.Stderr, "Error: %s\n", oneLine(err.Error()))
		return ExitUsage
	}
	if err := kctx.Run(); err != nil {
		var exit ExitError
		if errors.As(err, &exit) {
			return int(exit)
		}
		var usage usageError
		if errors.As(err, &usage) {
			fmt.Fprintf(app.Stderr, "Error: %s\n", oneLine(err.Error()))
			return ExitUsage
		}
		fmt.Fprintf(app.Stderr, "Error: %s\n", oneLine(err.Error()))
		return ExitFailure
	}
	return ExitOK
}

// usageError marks an error as a usage mistake (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// oneLine keeps an error message on one line so stderr stays one line per error.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

type versionCmd struct{}

func (versionCmd) Run(app *App) error {
	_, err := fmt.Fprintf(app.Stdout, "openprogram %s\n", app.Version)
	return err
}
