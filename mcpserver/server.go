package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/mcpserver/internal/stdio"
	"github.com/openprogram/openprogram/runtime/conversation"
	"github.com/openprogram/openprogram/sessions"
)

// ServerName is serverInfo.name.
const ServerName = "openprogram"

// DefaultDrainTimeout bounds how long Serve keeps writing responses that are
// still due after stdin ends.
const DefaultDrainTimeout = stdio.DefaultDrainTimeout

// Audit record types the MCP server itself writes (the one list of every
// type is in sessions; a turn's and a tool call's records are the
// conversation's, runtime/conversation), each with its payload type (see
// audit.go).
const (
	// AuditServerStart: [ServerStartPayload] when Serve starts.
	AuditServerStart = sessions.AuditServerStart
	// AuditServerStop: [ServerStopPayload] when Serve returns.
	AuditServerStop = sessions.AuditServerStop
	// AuditTaskCreated: [TaskCreatedPayload] when a task-augmented
	// prompt_send created its task.
	AuditTaskCreated = sessions.AuditTaskCreated
	// AuditTaskCancelled: [TaskCancelledPayload] when a tasks/cancel won.
	AuditTaskCancelled = sessions.AuditTaskCancelled
	// AuditTaskFinished: [TaskFinishedPayload] when a task reached its
	// terminal status in its runner.
	AuditTaskFinished = sessions.AuditTaskFinished
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
	// Conversations is the host's conversation service: every prompt_send
	// and tool_call goes through a line of it opened for Speaker, one per
	// connection. Its store serves the reads (sessions_list, session_get)
	// and its registry tools_list.
	Conversations *conversation.Service
	// Speaker is the authenticated MCP client's speaker
	// (authz.NewMCPClient): the authority of every request, which nothing
	// a client sends can change. Any other speaker is refused.
	Speaker authz.Speaker
	// ExposedTools is mcp_server.exposed_tools: the runtime tools tools_list
	// and tool_call may reach, in order. Empty exposes none.
	ExposedTools []string
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
}

// Server is the OpenProgram MCP service. One Server may serve several
// connections, one Serve call each; all share its options.
type Server struct {
	conv     *conversation.Service
	store    sessions.Store
	speaker  authz.Speaker
	clientID string
	exposed  []string
	// tasks is nil without task support.
	tasks *taskConfig

	version string
	drain   time.Duration
	log     *slog.Logger

	// newTaskID makes the id of a task.
	newTaskID func() string
	// cancelWait bounds how long prompt_cancel waits for the cancelled
	// prompt_send to be answered.
	cancelWait time.Duration
}

// New checks opts and returns a server, or an error saying which option to
// fix (the constructor convention of every module: see the README). The
// authority is fixed here: the MCP client speaker authz made (source
// "mcp", permission mode "ask", the paired, non-interactive authority of
// its client id). Nothing a client sends can change it.
func New(opts Options) (*Server, error) {
	return newServer(opts, false)
}

// newServer is New; a task's runner (runner) needs no TaskOptions.Start.
func newServer(opts Options, runner bool) (*Server, error) {
	if opts.Conversations == nil {
		return nil, errors.New("mcpserver: Options.Conversations is nil; pass the host's conversation service")
	}
	if err := opts.Speaker.Check(); err != nil {
		return nil, fmt.Errorf("mcpserver: Options.Speaker: %w", err)
	}
	clientID, ok := opts.Speaker.ClientID()
	if !ok {
		return nil, fmt.Errorf("mcpserver: %w: Options.Speaker is %s, not an MCP client's (authz.NewMCPClient)", authz.ErrInvalidSpeaker, opts.Speaker.ID())
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
		conv:       opts.Conversations,
		store:      opts.Conversations.Store(),
		speaker:    opts.Speaker,
		clientID:   clientID,
		exposed:    exposed,
		tasks:      tasks,
		version:    opts.Version,
		drain:      opts.DrainTimeout,
		log:        opts.Logger,
		newTaskID:  newTaskID,
		cancelWait: 5 * time.Second,
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
	s.speaker = s.speaker.WithLogger(s.log)
	return s, nil
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
	c, err := newConnection(s)
	if err != nil {
		return err
	}
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
		OnDrainTimeout: func() { c.line.Close(conversation.ReasonConnectionClosed) },
		Logger:         s.log,
	})
	c.conn = conn
	srv := c.mcpServer()
	defer c.stop()
	started := time.Now()
	// The start record is written while the session starts, so that the
	// initialize answer does not wait for the store's disk sync. tools/call
	// waits for it (see middleware) and so does the stop record.
	go func() {
		defer close(c.startAudited)
		c.line.Record(ctx, AuditServerStart, "", ServerStartPayload{ClientID: s.clientID, Version: s.version})
	}()

	ss, err := srv.Connect(ctx, conn, nil)
	if err != nil {
		<-c.startAudited
		c.line.Record(ctx, AuditServerStop, "", ServerStopPayload{ClientID: s.clientID, Reason: "error"})
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
	c.line.Close(conversation.ReasonConnectionClosed)
	switch {
	case reason == "cancelled":
		err = ctx.Err()
	case err != nil:
		reason = "error"
		err = fmt.Errorf("mcpserver: connection failed: %w", err)
	}
	<-c.startAudited
	c.line.Record(ctx, AuditServerStop, "", ServerStopPayload{ClientID: s.clientID, Reason: reason})
	sessionErr := ""
	if reason == "error" {
		sessionErr = semconv.ErrorTypeOther.Value.AsString()
	}
	c.recordSession(started, sessionErr)
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
