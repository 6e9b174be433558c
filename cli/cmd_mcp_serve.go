package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/mcpserver"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/events"
	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/runtime/questions"
	"github.com/openprogram/openprogram/runtime/tool"
	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/tokenauth"
)

type mcpServeCmd struct {
	LogLevel  string `name:"log-level" env:"OPENPROGRAM_LOG_LEVEL" default:"info" enum:"debug,info,warn,error" help:"Least severe log records written: ${enum}."`
	LogFormat string `name:"log-format" env:"OPENPROGRAM_LOG_FORMAT" default:"text" enum:"text,json" help:"Log record format: ${enum}."`
	LogFile   bool   `name:"log-file" help:"Also append the log to mcp-serve.log in the state directory (mode 0600), for clients that hide stderr."`
}

// Run authenticates, then wires the store, runtime and MCP service and serves
// stdin/stdout until stdin ends. Nothing is read from stdin, and nothing is
// written to stdout, before authentication succeeds.
func (c mcpServeCmd) Run(ctx context.Context, app *App) error {
	dir, err := app.StateDir()
	if err != nil {
		return authFailed(app, err)
	}
	clientID, err := tokenauth.Authenticate(app.Env, tokenauth.Path(dir))
	if err != nil {
		return authFailed(app, err)
	}
	logger, closeLog, err := serveLogger(app, dir, c.LogLevel, c.LogFormat, c.LogFile)
	if err != nil {
		return err
	}
	defer closeLog()
	app.Logger = logger
	log := app.Logger.With("client_id", clientID)

	cfg, err := LoadConfig(dir)
	if err != nil {
		return err
	}
	principal, err := authz.LoadOrCreateOwnerPrincipal(dir)
	if err != nil {
		return fmt.Errorf("load the owner principal: %w", err)
	}
	authority, err := authz.MCPClientAuthority(clientID, principal)
	if err != nil {
		return fmt.Errorf("build the MCP client authority: %w", err)
	}
	rules, err := cfg.Rules()
	if err != nil {
		return fmt.Errorf("tools.permission_rules: %w", err)
	}
	st, err := openStore(ctx, app, cfg, dir)
	if err != nil {
		return err
	}
	defer st.Close()

	workDirs := cfg.Strings("agent.work_dirs")
	reg, err := newRegistry(st, workDirs)
	if err != nil {
		return err
	}
	bus := events.NewBus(&events.BusOptions{Logger: log})
	defer bus.Close()
	qs := questions.New(&questions.Options{Bus: bus})
	executor := tool.NewExecutor(&tool.ExecutorOptions{Logger: log})
	prov, provErr := runtime.NewProvider(providerConfig(cfg), app.Env.Get)
	if provErr != nil {
		log.Warn("no model provider: prompts will complete with failed:true", "why", provErr.Error())
	}
	rt := runtime.New(runtime.Options{
		Store:        st,
		Registry:     reg,
		Executor:     executor,
		Bus:          bus,
		Questions:    qs,
		Provider:     prov,
		ProviderErr:  provErr,
		SystemPrompt: cfg.String("agent.system_prompt"),
		OnDenied:     auditTurnDenial(st, clientID, log),
		Logger:       log,
	})
	srv, err := mcpserver.New(mcpserver.Options{
		Store:        st,
		Registry:     reg,
		Executor:     executor,
		Turns:        rt,
		Bus:          bus,
		Questions:    qs,
		ClientID:     clientID,
		Authority:    authority,
		ExposedTools: cfg.Strings("mcp_server.exposed_tools"),
		Rules:        rules,
		WorkDirs:     workDirs,
		Version:      app.Version,
		Logger:       app.Logger, // mcpserver adds client_id itself
	})
	if err != nil {
		return fmt.Errorf("start the MCP server: %w", err)
	}
	log.Info("mcp serve ready", "state_dir", dir, "store", storeKind(storeURL(app.Env, cfg, dir)))
	if err := srv.Serve(ctx, app.Stdin, app.Stdout); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("serve MCP over stdio: %w", err)
	}
	return nil
}

// authFailed prints the one fixed line (and the cause, which never holds the
// token) and fails with exit status 1.
func authFailed(app *App, cause error) error {
	fmt.Fprintln(app.Stderr, "Error: MCP server authentication failed")
	fmt.Fprintf(app.Stderr, "cause: %s\n", oneLine(cause.Error()))
	return ExitError(ExitFailure)
}

// providerConfig maps config.json's model.* keys onto the runtime's provider
// configuration.
func providerConfig(cfg *Config) provider.Config {
	pc := provider.Config{
		Provider:  cfg.String("model.provider"),
		Model:     cfg.String("model.name"),
		BaseURL:   cfg.String("model.base_url"),
		APIKeyEnv: cfg.String("model.api_key_env"),
		Script:    cfg.String("model.script"),
	}
	return pc
}

// auditTurnDenial records gate denials inside prompt_send turns (tool_call
// denials are audited by mcpserver itself).
func auditTurnDenial(st sessions.Store, clientID string, log interface {
	Warn(string, ...any)
}) func(string, authz.Decision) {
	return func(sessionID string, d authz.Decision) {
		payload, err := json.Marshal(map[string]any{
			"client_id": clientID, "reason_code": d.ReasonCode, "capability": string(d.Capability), "in_turn": true,
		})
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := st.AppendAudit(ctx, sessions.NewAuditRecord{
			Type: mcpserver.AuditToolDenied, Origin: "mcp/" + clientID, SessionID: sessionID, Payload: payload,
		}); err != nil {
			log.Warn("audit a gate denial", "err", err)
		}
	}
}

func storeKind(u string) string {
	if strings.HasPrefix(u, "sqlite:") {
		return "sqlite"
	}
	return "postgres"
}
