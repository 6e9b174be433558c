package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openprogram/openprogram/cli/host"
)

// hostConfig is the one step from config.json (already validated by
// LoadConfig, key by key) and the environment to the host's typed
// configuration: the front ends that run turns (mcp serve, chat, prompt)
// build their host from it and nothing after it reads the map again.
func hostConfig(app *App, cfg *Config, stateDir string) (host.Config, error) {
	rules, err := cfg.Rules()
	if err != nil {
		return host.Config{}, fmt.Errorf("tools.permission_rules: %w", err)
	}
	tasks, err := tasksConfig(cfg)
	if err != nil {
		return host.Config{}, err
	}
	return host.Config{
		StateDir: stateDir,
		StoreURL: storeURL(app.Env, cfg, stateDir),
		Model:    providerConfig(cfg),
		Agent: host.AgentConfig{
			SystemPrompt:  cfg.String("agent.system_prompt"),
			WorkDirs:      cfg.Strings("agent.work_dirs"),
			MaxSteps:      cfg.integer("agent.max_steps"),
			ContextTokens: cfg.integer("model.context_tokens"),
			TurnTimeout:   cfg.duration("model.turn_timeout"),
		},
		MCPServer: host.MCPServerConfig{ExposedTools: cfg.Strings("mcp_server.exposed_tools"), Tasks: tasks},
		Tools:     host.ToolsConfig{PermissionRules: rules},
		Audit:     host.AuditConfig{LogFailures: cfg.String("audit.on_failure") == "log"},
	}, nil
}

// openHost loads config.json of the state directory (with the model
// overrides of the environment, loadRunConfig) and builds the host
// every turn-running front end shares; opts.Getenv and opts.Version come
// from app, and a nil opts.Logger is app's.
func openHost(ctx context.Context, app *App, stateDir string, opts host.Options) (*host.Host, error) {
	cfg, err := loadRunConfig(app.Env, stateDir)
	if err != nil {
		return nil, err
	}
	hc, err := hostConfig(app, cfg, stateDir)
	if err != nil {
		return nil, err
	}
	opts.Getenv, opts.Version = app.Env.Get, app.Version
	if opts.Logger == nil {
		opts.Logger = app.Logger
	}
	return host.Open(ctx, hc, &opts)
}

// currentDir is the directory the command was started in, symlinks
// resolved: the owner's working directory when agent.work_dirs is empty.
func currentDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the current directory (the working directory when agent.work_dirs is empty): %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(wd); err == nil {
		wd = resolved
	}
	return wd, nil
}
