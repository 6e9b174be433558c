package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/mcpserver/internal/stdio"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/events"
	"github.com/openprogram/openprogram/runtime/questions"
	"github.com/openprogram/openprogram/sessions"
)

// ServerName is serverInfo.name.
const ServerName = "openprogram"

// DefaultDrainTimeout bounds how long Serve keeps writing responses that are
// still due after stdin ends.
const DefaultDrainTimeout = stdio.DefaultDrainTimeout

// Audit record types written by the server (the one list of every type is
// in sessions), each with its payload type (see audit.go). Payloads never hold prompt text, message content, tool
// arguments or the token.
const (
	// AuditServerStart: [ServerStartPayload] when Serve starts.
	AuditServerStart = sessions.AuditServerStart
	// AuditServerStop: [ServerStopPayload] when Serve returns.
	AuditServerStop = sessions.AuditServerStop
	// AuditPromptRequested: [PromptRequestedPayload] for every prompt_send,
	// written before anything of it runs (see [AuditFailure]).
	AuditPromptRequested = sessions.AuditPromptRequested
	// AuditToolRequested: [ToolRequestedPayload] for every tool_call of an
	// exposed tool, written before the gate and the tool run.
	AuditToolRequested = sessions.AuditToolRequested
	// AuditToolDenied: [ToolDeniedPayload] for every gate denial, of
	// tool_call and of a tool call inside a prompt_send turn.
	AuditToolDenied = sessions.AuditToolDenied
	// AuditPromptCompleted: [PromptCompletedPayload] for every prompt_send
	// turn that ran to its end.
	AuditPromptCompleted = sessions.AuditPromptCompleted
	// AuditRequestCancelled: [RequestCancelledPayload] for a prompt_send
	// turn that was cancelled.
	AuditRequestCancelled = sessions.AuditRequestCancelled
	// AuditTaskCreated: [TaskCreatedPayload] when a task-augmented
	// prompt_send created its task.
	AuditTaskCreated = sessions.AuditTaskCreated
	// AuditTaskCancelled: [TaskCancelledPayload] when a tasks/cancel won.
	AuditTaskCancelled = sessions.AuditTaskCancelled
	// AuditTaskFinished: [TaskFinishedPayload] when a task reached its
	// terminal status in its runner.
	AuditTaskFinished = sessions.AuditTaskFinished
)

// Reasons of [AuditRequestCancelled].
const (
	ReasonPromptCancel     = "prompt_cancel"
	ReasonRequestCancelled = "request_cancelled"
	ReasonConnectionClosed = "connection_closed"
	// ReasonTaskCancel: a tasks/cancel stopped a task's turn.
	ReasonTaskCancel = "tasks_cancel"
	// ReasonRunnerStopped: a task's runner was stopped (its context ended)
	// before the turn's commit point.
	ReasonRunnerStopped = "runner_stopped"
)

// servedMethods are the only requests the server answers; the connection
// answers any other with -32601.
var servedMethods = []string{"initialize", "ping", "tools/list", "tools/call"}

// detachedParams are kept from go-sdk by the connection (stdio
// Options.Detach): the middleware validates a tools/call's "arguments" from
// the connection's Request, so go-sdk, which only passes them on, does not
// decode and copy a maximal request's 16 MiB twice more.
var detachedParams = map[string]string{"tools/call": "arguments"}

// Options configure a [Server]. Every field without a stated default is
// required.
type Options struct {
	// Store holds sessions, messages and audit records.
	Store sessions.Store
	// Runtime runs prompt_send turns and tool_call calls
	// ([runtime.Runtime.RunTool]); its registry is the live tool registry,
	// its bus carries the turn and question events, and questions raised in
	// its question registry on a session with a prompt_send running on
	// this connection are declined. It must have a Bus and Questions.
	Runtime *runtime.Runtime

	// ClientID is the authenticated client id (tokenauth.Authenticate).
	ClientID string
	// Authority is the fixed authority of every request; it must equal
	// authz.MCPClientAuthority(ClientID, <owner principal>).
	Authority authz.Authority
	// ExposedTools is mcp_server.exposed_tools: the runtime tools tools_list
	// and tool_call may reach, in order. Empty exposes none.
	ExposedTools []string
	// Rules are the permission rules (tools.permission_rules). Optional.
	Rules []authz.Rule
	// WorkDirs are the absolute working directories of runtime tools.
	// Optional; without any, write tools are always denied.
	WorkDirs []string
	// StateDir is the absolute state directory. The gate treats it as a
	// protected directory wherever it is. Optional.
	StateDir string
	// OnAuditFailure is what a prompt_send or tool_call does when its
	// request record cannot be written. Default [AuditRefuse].
	OnAuditFailure AuditFailure
	// Tasks, when set, enables durable MCP tasks for prompt_send (see
	// [TaskOptions]). Nil serves no tasks: the server's answers are then
	// exactly those of a server without task support.
	Tasks *TaskOptions

	// Version is serverInfo.version. Default "(devel)".
	Version string
	// DrainTimeout bounds how long responses still due are awaited after
	// stdin ends. Default DefaultDrainTimeout.
	DrainTimeout time.Duration
	// Logger receives diagnostics (stderr in the CLI). Nil discards.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Server is the OpenProgram MCP service. One Server may serve several
// connections, one Serve call each; all share its options.
type Server struct {
	store     sessions.Store
	rt        *runtime.Runtime
	turns     turnRunner // rt, or a test's fake
	bus       *events.Bus
	questions *questions.Registry

	clientID  string
	authority authz.Authority
	exposed   []string
	rules     []authz.Rule
	workDirs  []string
	stateDir  string

	onAuditFailure AuditFailure
	// tasks is nil without task support.
	tasks *taskConfig

	version string
	drain   time.Duration
	log     *slog.Logger
	now     func() time.Time

	// newSessionID makes the id of a session prompt_send creates.
	newSessionID func() string
	// newTaskID makes the id of a task.
	newTaskID func() string
	// cancelWait bounds how long prompt_cancel waits for the cancelled
	// prompt_send to be answered.
	cancelWait time.Duration
}

// New checks opts and returns a server, or an error saying which option to
// fix (the constructor convention of every module: see the README). The
// authority is fixed here:
// source "mcp", permission mode "ask", and exactly the paired,
// non-interactive MCP client authority of opts.ClientID. Nothing a client
// sends can change it.
func New(opts Options) (*Server, error) {
	return newServer(opts, false)
}

// newServer is New; a task's runner (runner) needs no TaskOptions.Start.
func newServer(opts Options, runner bool) (*Server, error) {
	switch {
	case opts.Store == nil:
		return nil, errors.New("mcpserver: Options.Store is nil; open the session store first")
	case opts.Runtime == nil:
		return nil, errors.New("mcpserver: Options.Runtime is nil; pass the runtime")
	case opts.Runtime.Bus() == nil:
		return nil, errors.New("mcpserver: the runtime has no event bus; set runtime.Options.Bus")
	case opts.Runtime.Questions() == nil:
		return nil, errors.New("mcpserver: the runtime has no question registry; set runtime.Options.Questions")
	}
	if !authz.IsClientID(opts.ClientID) {
		return nil, fmt.Errorf("mcpserver: client id must be 16 lowercase hex characters (got %d bytes); authenticate the client first", len(opts.ClientID))
	}
	want, err := authz.MCPClientAuthority(opts.ClientID, opts.Authority.PrincipalID)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: %w", err)
	}
	if opts.Authority != want {
		return nil, fmt.Errorf("mcpserver: %w: the authority must be authz.MCPClientAuthority(client id, owner principal): paired, non-interactive, speaker mcp/<client id>", authz.ErrInvalidAuthority)
	}
	if opts.OnAuditFailure != AuditRefuse && opts.OnAuditFailure != AuditLog {
		return nil, fmt.Errorf("mcpserver: Options.OnAuditFailure %d is neither AuditRefuse nor AuditLog", opts.OnAuditFailure)
	}
	for _, r := range opts.Rules {
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("mcpserver: permission rule %s: %w", r, err)
		}
	}
	for _, d := range opts.WorkDirs {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("mcpserver: working directory %q is not absolute", d)
		}
	}
	tasks, err := newTaskConfig(opts.Tasks, runner)
	if err != nil {
		return nil, err
	}
	var exposed []string
	for _, name := range opts.ExposedTools {
		if name == "" {
			return nil, errors.New("mcpserver: exposed tool names must not be empty")
		}
		if !slices.Contains(exposed, name) {
			exposed = append(exposed, name)
		}
	}
	s := &Server{
		store:          opts.Store,
		rt:             opts.Runtime,
		turns:          opts.Runtime,
		bus:            opts.Runtime.Bus(),
		questions:      opts.Runtime.Questions(),
		clientID:       opts.ClientID,
		authority:      opts.Authority,
		exposed:        exposed,
		rules:          slices.Clone(opts.Rules),
		workDirs:       slices.Clone(opts.WorkDirs),
		stateDir:       opts.StateDir,
		onAuditFailure: opts.OnAuditFailure,
		tasks:          tasks,
		version:        opts.Version,
		drain:          opts.DrainTimeout,
		log:            opts.Logger,
		now:            opts.Now,
		newSessionID:   newSessionID,
		newTaskID:      newTaskID,
		cancelWait:     5 * time.Second,
	}
	if s.version == "" {
		s.version = "(devel)"
	}
	if s.drain <= 0 {
		s.drain = DefaultDrainTimeout
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// newSessionID returns "mcp_" and 32 random lowercase hex characters.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "mcp_" + hex.EncodeToString(b[:])
}

// authzRequest is the gate request of every runtime tool call made for
// this client.
func (s *Server) authzRequest() authz.Request {
	return authz.Request{
		Source:         authz.SourceMCP,
		PermissionMode: authz.ModeAsk,
		Authority:      s.authority,
		Rules:          slices.Clone(s.rules),
		WorkDirs:       slices.Clone(s.workDirs),
		StateDir:       s.stateDir,
		Logger:         s.log,
	}
}

// Serve runs the MCP protocol over in (the client's frames, usually
// os.Stdin) and out (the server's frames, usually os.Stdout) until in ends.
// Then it keeps writing the responses still due for at most the drain
// timeout, cancels what still runs (reason connection_closed), and returns
// nil. When ctx ends first it cancels everything at once and returns
// ctx.Err(). A failure to write out ends the connection with that error.
// If in is an io.Closer it is closed when the connection ends.
//
// Nothing but JSON-RPC frames is ever written to out.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	c := newConnection(s)
	var handlers map[string]stdio.Handler
	if s.tasks != nil {
		handlers = c.taskHandlers()
	}
	conn := stdio.New(in, out, stdio.Options{
		Methods:        servedMethods,
		CheckParams:    checkParams,
		Detach:         detachedParams,
		Handlers:       handlers,
		DrainTimeout:   s.drain,
		OnDrainTimeout: func() { c.cancelAll(ReasonConnectionClosed) },
		Logger:         s.log,
	})
	c.conn = conn
	srv := c.mcpServer()
	c.start()
	defer c.stop()
	// The start record is written while the session starts, so that the
	// initialize answer does not wait for the store's disk sync. tools/call
	// waits for it (see middleware) and so does the stop record.
	go func() {
		defer close(c.startAudited)
		s.audit(AuditServerStart, "", ServerStartPayload{ClientID: s.clientID, Version: s.version})
	}()

	ss, err := srv.Connect(ctx, conn, nil)
	if err != nil {
		<-c.startAudited
		s.audit(AuditServerStop, "", ServerStopPayload{ClientID: s.clientID, Reason: "error"})
		return fmt.Errorf("mcpserver: start the MCP session: %w", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- ss.Wait() }()

	reason := "eof"
	select {
	case err = <-waited:
	case <-ctx.Done():
		reason = "cancelled"
		conn.Abort()
		err = <-waited
	}
	c.cancelAll(ReasonConnectionClosed)
	switch {
	case reason == "cancelled":
		err = ctx.Err()
	case err != nil:
		reason = "error"
		err = fmt.Errorf("mcpserver: connection failed: %w", err)
	}
	<-c.startAudited
	s.audit(AuditServerStop, "", ServerStopPayload{ClientID: s.clientID, Reason: reason})
	return err
}

// checkParams checks the params of a request before go-sdk decodes them,
// so that a malformed tools/call gets the contract's error, never go-sdk's
// decoding text (see contracts.ValidateCallParams).
func checkParams(method string, params json.RawMessage) *jsonrpc.Error {
	if method != "tools/call" {
		return nil
	}
	return contracts.ValidateCallParams(params)
}

// mcpServer builds the go-sdk server of one connection.
func (c *connection) mcpServer() *mcp.Server {
	s := c.s
	srv := mcp.NewServer(&mcp.Implementation{Name: ServerName, Version: s.version}, &mcp.ServerOptions{
		Logger: s.log,
		// Tools only: without this go-sdk also advertises logging.
		Capabilities:              &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		SupportedProtocolVersions: contracts.SupportedProtocolVersions(),
	})
	for _, t := range contracts.Tools() {
		srv.AddTool(t, c.toolHandler(t.Name))
	}
	srv.AddReceivingMiddleware(c.middleware)
	return srv
}
