package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/mcpserver"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/builtin"
	"github.com/openprogram/openprogram/runtime/conversation"
	"github.com/openprogram/openprogram/runtime/questions"
	"github.com/openprogram/openprogram/runtime/tool"
	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/tokenauth"
)

// Options tune [Open]. The zero value works.
type Options struct {
	// Getenv reads the environment: the model's API key and the ${NAME}
	// references of model.headers. Nil reads nothing.
	Getenv func(string) string
	// Environ is the whole environment (os.Environ form): the secret
	// values telemetry's captured content is masked of
	// (telemetry.capture_content). Nil: content is never captured.
	Environ []string
	// Version is the build's version, sent in the model requests'
	// User-Agent and as the MCP serverInfo.version.
	Version string
	// Logger receives the runtime's and the tools' diagnostics. Nil
	// discards.
	Logger *slog.Logger
	// StartTask launches the runner of task taskID, just created by the MCP
	// service of the client with clientID ([Host.MCPServer]) claimed for
	// runner; the runner calls [Host.RunTask] with taskID and runner, which
	// only it is told. It must not tie the runner's life to ctx (the
	// creating request's). Nil: the MCP service offers no tasks.
	StartTask func(ctx context.Context, clientID, taskID, runner string) error
	// TaskEnded returns a channel closed once the runner StartTask started
	// for task taskID reports the task's end, or nil when no report will
	// come (mcpserver.TaskOptions.Ended). Nil: the MCP service reads the
	// store alone.
	TaskEnded func(taskID string) <-chan struct{}
	// TaskFinished is called by [Host.RunTask] as soon as the task it runs
	// is terminal in the store, before its last record
	// (mcpserver.TaskOptions.Finished): a runner reports the end with it.
	TaskFinished func(taskID string)
}

// Host is the runtime built once: the store, the tool registry, the
// question registry, the turn loop with its model provider, and the
// conversation service over them. It hands out speakers ([Host.Owner],
// [Host.MCPClient]). Close it when done.
type Host struct {
	cfg         Config
	store       sessions.Store
	reg         *tool.Registry
	qs          *questions.Registry
	rt          *runtime.Runtime
	conv        *conversation.Service
	principal   string
	providerErr error
	version     string
	log         *slog.Logger
	startTask   func(ctx context.Context, clientID, taskID, runner string) error
	taskEnded   func(taskID string) <-chan struct{}
	taskDone    func(taskID string)
	tel         *Telemetry
}

// Open builds the host from cfg: it loads (or creates) the owner principal
// of the state directory, opens the store ([OpenStore], creating what a
// first run needs), registers the built-in tools and builds the runtime. A
// model configuration that cannot work is not an error: the runtime then
// has no provider and [Host.ProviderErr] says why.
func Open(ctx context.Context, cfg Config, opts *Options) (*Host, error) {
	if opts == nil {
		opts = &Options{}
	}
	if cfg.StateDir == "" || !filepath.IsAbs(cfg.StateDir) {
		return nil, fmt.Errorf("host: the state directory %q is not an absolute path", cfg.StateDir)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := EnsureStateDir(cfg.StateDir); err != nil {
		return nil, err
	}
	principal, err := authz.LoadOrCreateOwnerPrincipal(cfg.StateDir)
	if err != nil {
		return nil, fmt.Errorf("load the owner principal: %w", err)
	}
	st, err := OpenStore(ctx, cfg.StateDir, cfg.StoreURL, &StoreOptions{Create: true, Logger: log})
	if err != nil {
		return nil, err
	}
	reg, err := NewRegistry(st, cfg, log)
	if err != nil {
		st.Close()
		return nil, err
	}
	qs := questions.New(nil)
	pc := cfg.Model
	pc.Version = opts.Version
	getenv := opts.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	prov, provErr := runtime.NewProvider(pc, getenv)
	// Telemetry never stops the host: a configuration it cannot use is
	// logged and nothing is exported.
	tel, err := StartTelemetry(ctx, cfg.Telemetry, getenv, opts.Version, log)
	if err != nil {
		log.Warn("telemetry off", "why", err.Error())
	}
	var capture func(string) string
	if tel.Target().CaptureContent {
		if opts.Environ == nil {
			log.Warn("telemetry content capture off: the host was given no environment to mask secrets of")
		} else if capture, err = runtime.SecretEnv(cfg.Model).Redactor(withTokenFile(opts.Environ, cfg.StateDir)); err != nil {
			log.Warn("telemetry content capture off", "why", err.Error())
			capture = nil
		}
	}
	h := &Host{cfg: cfg, store: st, reg: reg, qs: qs, principal: principal,
		providerErr: provErr, version: opts.Version, log: log, startTask: opts.StartTask, taskEnded: opts.TaskEnded, taskDone: opts.TaskFinished,
		tel: tel}
	h.rt = runtime.New(runtime.Options{
		Store:           st,
		Registry:        reg,
		Executor:        tool.NewExecutor(&tool.ExecutorOptions{Logger: log}),
		Questions:       qs,
		Standing:        conversation.StandingApprovals(st, log),
		Provider:        prov,
		Model:           cfg.Model.Model,
		CaptureContent:  capture,
		ProviderErr:     provErr,
		SystemPrompt:    cfg.Agent.SystemPrompt,
		MaxSteps:        cfg.Agent.MaxSteps,
		ContextTokens:   cfg.Agent.ContextTokens,
		MaxOutputTokens: cfg.Model.Settings.MaxOutputTokens,
		TurnTimeout:     cfg.Agent.TurnTimeout,
		Logger:          log,
	})
	onAuditFailure := conversation.AuditRefuse
	if cfg.Audit.LogFailures {
		onAuditFailure = conversation.AuditLog
	}
	h.conv, err = conversation.New(conversation.Options{Store: st, Runtime: h.rt, Questions: qs, OnAuditFailure: onAuditFailure, Logger: log})
	if err != nil {
		st.Close()
		return nil, err
	}
	return h, nil
}

// NewRegistry is the one way the live runtime tool registry is built: the
// built-in tools over store, confined to cfg's working directories and
// state directory, with the secret environment variables of cfg's model
// configuration (runtime.SecretEnv), which no tool's subprocess ever sees.
// [Open] builds its registry with it; a command that only lists tools
// (tools list, doctor) calls it too. log receives the file tools' debug
// records (nil discards).
func NewRegistry(store sessions.Store, cfg Config, log *slog.Logger) (*tool.Registry, error) {
	reg := tool.NewRegistry()
	if err := builtin.Register(reg, builtin.Deps{Store: store, WorkDirs: cfg.Agent.WorkDirs, StateDir: cfg.StateDir,
		Logger: log, Secrets: runtime.SecretEnv(cfg.Model)}); err != nil {
		return nil, fmt.Errorf("register the built-in tools: %w", err)
	}
	return reg, nil
}

// Close flushes the telemetry (within [TelemetryFlushTimeout]) and closes
// the store.
func (h *Host) Close() error {
	if err := h.tel.Shutdown(context.Background()); err != nil {
		h.log.Warn("telemetry flush at exit", "error", err)
	}
	return h.store.Close()
}

// Telemetry returns where the host's telemetry goes (nil: off).
func (h *Host) Telemetry() *Telemetry { return h.tel }

// Config returns the configuration the host was built from.
func (h *Host) Config() Config { return h.cfg }

// Store returns the session store.
func (h *Host) Store() sessions.Store { return h.store }

// Runtime returns the turn loop.
func (h *Host) Runtime() *runtime.Runtime { return h.rt }

// Registry returns the runtime tool registry.
func (h *Host) Registry() *tool.Registry { return h.reg }

// Conversations returns the conversation service: every speaker's turns,
// cancels, approvals and their audit go through a line of it.
func (h *Host) Conversations() *conversation.Service { return h.conv }

// ProviderErr is why the runtime has no model provider (usually a
// *runtime.ConfigError naming the keys to set), or nil.
func (h *Host) ProviderErr() error { return h.providerErr }

// Principal returns the install's owner principal (owner.json).
func (h *Host) Principal() string { return h.principal }

// OwnerOptions choose the owner's speaker.
type OwnerOptions struct {
	// Interactive is a person at a terminal who answers approval questions
	// (`chat`); false denies what would need an approval at once (`prompt`).
	Interactive bool
	// WorkDir is the owner's working directory when agent.work_dirs is
	// empty: the directory the console was started in. It must be absolute.
	WorkDir string
}

// Owner returns the owner's speaker (authz.NewOwner): source cli, the
// owner tier, the principal of owner.json, the permission rules,
// agent.work_dirs (or o.WorkDir) and the state directory.
func (h *Host) Owner(o OwnerOptions) (sp authz.Speaker, err error) {
	dirs := h.cfg.Agent.WorkDirs
	if len(dirs) == 0 {
		if o.WorkDir == "" || !filepath.IsAbs(o.WorkDir) {
			return sp, errors.New("host: the owner needs a working directory: set agent.work_dirs, or start from an absolute directory")
		}
		dirs = []string{o.WorkDir}
	}
	sp, err = authz.NewOwner(h.principal, o.Interactive, h.scope(dirs))
	if err != nil {
		return sp, fmt.Errorf("build the owner's speaker: %w", err)
	}
	return sp.WithLogger(h.log), nil
}

// MCPClient returns the speaker of the MCP client with clientID (the token
// fingerprint, authz.NewMCPClient): source mcp, the paired tier,
// non-interactive, as docs/contract.md section 3 fixes it.
func (h *Host) MCPClient(clientID string) (authz.Speaker, error) {
	sp, err := authz.NewMCPClient(clientID, h.principal, h.scope(h.cfg.Agent.WorkDirs))
	if err != nil {
		return sp, fmt.Errorf("build the MCP client's speaker: %w", err)
	}
	return sp.WithLogger(h.log), nil
}

// scope is where every speaker of this host acts: the permission rules,
// workDirs and the state directory, which no speaker's tool writes.
func (h *Host) scope(workDirs []string) authz.Scope {
	return authz.Scope{Rules: h.cfg.Tools.PermissionRules, WorkDirs: workDirs, StateDir: h.cfg.StateDir}
}

// MCPServer returns the MCP service for the client with clientID, over this
// host's conversation service, with the client's speaker,
// mcp_server.exposed_tools and, when mcp_server.tasks.enabled and
// [Options.StartTask] is set, durable tasks. logger receives its
// diagnostics (it adds the client id itself); nil uses the host's.
func (h *Host) MCPServer(clientID string, logger *slog.Logger) (*mcpserver.Server, error) {
	opts, err := h.mcpOptions(clientID, logger)
	if err != nil {
		return nil, err
	}
	if ts, err := h.Tasks(); err == nil && h.startTask != nil {
		start := h.startTask
		opts.Tasks = h.taskOptions(ts, func(ctx context.Context, taskID, runner string) error { return start(ctx, clientID, taskID, runner) })
		opts.Tasks.Ended = h.taskEnded
	}
	return mcpserver.New(opts)
}

// mcpOptions are the MCP service's options for clientID: what
// [Host.MCPServer] serves and [Host.RunTask] runs a task with.
func (h *Host) mcpOptions(clientID string, logger *slog.Logger) (mcpserver.Options, error) {
	sp, err := h.MCPClient(clientID)
	if err != nil {
		return mcpserver.Options{}, err
	}
	if logger == nil {
		logger = h.log
	}
	return mcpserver.Options{
		Conversations: h.conv,
		Speaker:       sp,
		ExposedTools:  h.cfg.MCPServer.ExposedTools,
		Version:       h.version,
		Logger:        logger,
	}, nil
}

// withTokenFile is env with the state directory's MCP token as its
// variable, so that captured telemetry content is masked of the token in
// a process whose environment lacks it (a task's runner).
func withTokenFile(env []string, stateDir string) []string {
	token, err := tokenauth.Read(tokenauth.Path(stateDir))
	if err != nil || token == "" {
		return env
	}
	return append(slices.Clip(env), tokenauth.EnvVar+"="+token)
}
