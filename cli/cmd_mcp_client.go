package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/openprogram/openprogram/cli/internal/clients"
)

type mcpCmd struct {
	Serve        mcpServeCmd        `cmd:"" help:"Serve the six OpenProgram tools over stdio (authenticates with OPENPROGRAM_MCP_TOKEN before reading stdin)."`
	Token        mcpTokenCmd        `cmd:"" help:"Manage the MCP server token."`
	ClientConfig mcpClientConfigCmd `cmd:"" name:"client-config" help:"Print the configuration that adds this server to an MCP client (stdout: exactly what to paste; hints on stderr)."`
	Install      mcpInstallCmd      `cmd:"" help:"Add this server to an MCP client's configuration file (or run claude mcp add)."`
	Uninstall    mcpUninstallCmd    `cmd:"" help:"Remove this server from an MCP client's configuration file (or run claude mcp remove)."`
	RunTask      mcpRunTaskCmd      `cmd:"" name:"run-task" hidden:"" help:"Run one durable MCP task to its end (mcp serve starts it, detached)."`
}

type mcpClientConfigCmd struct {
	Client string `name:"client" default:"claude-desktop" enum:"${clients}" help:"The client: ${enum}."`
}

// Run prints exactly what the user pastes on stdout, and where it goes and
// how its secrets reach the server on stderr.
func (c *mcpClientConfigCmd) Run(app *App) error {
	l, err := newLaunch(app)
	if err != nil {
		return err
	}
	out, err := clients.Snippet(c.Client, l)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprint(app.Stdout, out); err != nil {
		return err
	}
	for _, h := range clients.Hints(app.Env, c.Client, l, false) {
		fmt.Fprintln(app.Stderr, h)
	}
	return nil
}

// newLaunch is what a client needs to start `mcp serve`: this binary
// (known, or an error before anything is read) with the state directory and
// the model key variable of config.json.
func newLaunch(app *App) (clients.Launch, error) {
	if app.Executable == "" {
		return clients.Launch{}, errors.New("cannot find the path of the openprogram binary; run it by its absolute path")
	}
	cfg, _, err := loadAppConfig(app)
	if err != nil {
		return clients.Launch{}, err
	}
	return clients.NewLaunch(app.Executable, app.Env, cfg), nil
}

// clientTarget is what install and uninstall act on.
type clientTarget struct {
	Client string `name:"client" required:"" enum:"${clients}" help:"The client: ${enum}."`
	Scope  string `name:"scope" default:"user" enum:"user,project" help:"user: every project (the client's user configuration); project: the current directory's (.cursor/, .vscode/, .codex/, .gemini/, opencode.json, .mcp.json)."`
	DryRun bool   `name:"dry-run" help:"Show the change as a diff (or the command) and write nothing."`
}

func (c clientTarget) target() clients.Target {
	return clients.Target{Client: c.Client, Scope: c.Scope, DryRun: c.DryRun}
}

// installer writes to app's streams and reads its environment.
func installer(app *App) clients.Installer {
	return clients.Installer{Stdout: app.Stdout, Stderr: app.Stderr, Env: app.Env}
}

// targetUsage makes a client and scope without a configuration file a
// usage error.
func targetUsage(err error) error {
	var te *clients.TargetError
	if errors.As(err, &te) {
		return usageError{te.Error()}
	}
	return err
}

type mcpInstallCmd struct {
	clientTarget `embed:""`
}

// Run merges our entry into the client's configuration file.
func (c *mcpInstallCmd) Run(ctx context.Context, app *App) error {
	l, err := newLaunch(app)
	if err != nil {
		return err
	}
	return targetUsage(installer(app).Install(ctx, c.target(), l))
}

type mcpUninstallCmd struct {
	clientTarget `embed:""`
}

// Run removes our entry (and only it) from the client's configuration.
func (c *mcpUninstallCmd) Run(ctx context.Context, app *App) error {
	// A configuration that does not load names no model key: the VS Code
	// inputs of the default keys still go.
	cfg, _, _ := loadAppConfig(app)
	return targetUsage(installer(app).Uninstall(ctx, c.target(), cfg))
}
