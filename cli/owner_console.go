package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/builtin"
	"github.com/openprogram/openprogram/runtime/events"
	"github.com/openprogram/openprogram/runtime/questions"
	"github.com/openprogram/openprogram/sessions"
)

// Audit record types the owner's console writes (origin "owner").
const (
	// AuditOwnerApproval records an approval the owner granted or denied
	// in `openprogram chat`: tool, decision and session, never arguments.
	AuditOwnerApproval = "owner.approval"
	// AuditOwnerSessionCreated records a session `chat` or `prompt` made.
	AuditOwnerSessionCreated = "owner.session.created"
)

// Decisions of an [OwnerApprovalPayload].
const (
	DecisionAllowOnce    = "allow_once"
	DecisionAllowSession = "allow_session"
	DecisionDeny         = "deny"
)

// OwnerApprovalPayload is the payload of [AuditOwnerApproval]. Standing
// marks a call allowed by an earlier "allow for this session" without a
// new question to the owner.
type OwnerApprovalPayload struct {
	SessionID  string `json:"session_id"`
	Tool       string `json:"tool"`
	Capability string `json:"capability"`
	Decision   string `json:"decision"`
	Standing   bool   `json:"standing,omitempty"`
}

// OwnerSessionCreatedPayload is the payload of [AuditOwnerSessionCreated]:
// who made the session and through which command.
type OwnerSessionCreatedPayload struct {
	SessionID   string `json:"session_id"`
	Source      string `json:"source"`
	SpeakerID   string `json:"speaker_id"`
	PrincipalID string `json:"principal_id"`
	Command     string `json:"command"`
}

// ownerAgent is the agent of the sessions the owner's console creates.
const ownerAgent = "main"

// ownerConsole is what `chat` and `prompt` share: the store, the runtime
// and the owner's gate request (source cli, owner tier).
type ownerConsole struct {
	store sessions.Store
	rt    *runtime.Runtime
	bus   *events.Bus
	qs    *questions.Registry // nil for prompt: nobody answers
	req   authz.Request
	log   *slog.Logger
}

// openOwnerConsole wires the store and the runtime for the owner.
// Interactive consoles get a question registry and an interactive
// authority; a non-interactive one has approvals denied at once, like MCP.
// The working directories are config agent.work_dirs, or the current
// directory when that is empty.
func openOwnerConsole(ctx context.Context, app *App, interactive bool) (*ownerConsole, error) {
	dir, err := app.StateDir()
	if err != nil {
		return nil, err
	}
	cfg, err := loadRunConfig(app.Env, dir)
	if err != nil {
		return nil, err
	}
	if err := ensureStateDir(dir); err != nil {
		return nil, err
	}
	principal, err := authz.LoadOrCreateOwnerPrincipal(dir)
	if err != nil {
		return nil, fmt.Errorf("load the owner principal: %w", err)
	}
	authority, err := authz.OwnerAuthority(principal)
	if err != nil {
		return nil, fmt.Errorf("build the owner authority: %w", err)
	}
	if !interactive {
		authority.Interaction = authz.InteractionNonInteractive
	}
	rules, err := cfg.Rules()
	if err != nil {
		return nil, fmt.Errorf("tools.permission_rules: %w", err)
	}
	workDirs, err := ownerWorkDirs(cfg)
	if err != nil {
		return nil, err
	}
	st, err := openStore(ctx, app, cfg, dir)
	if err != nil {
		return nil, err
	}
	reg, err := newRegistry(st, builtin.Deps{WorkDirs: workDirs, StateDir: dir, Logger: app.Logger})
	if err != nil {
		st.Close()
		return nil, err
	}
	log := app.Logger
	// A terminal may be slower than the model: room for long replies.
	bus := events.NewBus(&events.BusOptions{Buffer: 4096, Logger: log})
	var qs *questions.Registry
	if interactive {
		qs = questions.New(&questions.Options{Bus: bus})
	}
	rt, provErr := newRuntime(app, cfg, st, reg, bus, qs, log)
	if provErr != nil {
		log.Debug("no model provider: turns will complete with failed:true", "why", provErr.Error())
	}
	return &ownerConsole{
		store: st, rt: rt, bus: bus, qs: qs, log: log,
		req: authz.Request{Source: authz.SourceCLI, PermissionMode: authz.ModeAsk, Authority: authority, Rules: rules, WorkDirs: workDirs},
	}, nil
}

// ownerWorkDirs is agent.work_dirs, or the current directory.
func ownerWorkDirs(cfg *Config) ([]string, error) {
	if dirs := cfg.Strings("agent.work_dirs"); len(dirs) > 0 {
		return dirs, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("find the current directory (the working directory when agent.work_dirs is empty): %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(wd); err == nil {
		wd = resolved
	}
	return []string{wd}, nil
}

func (c *ownerConsole) Close() {
	c.bus.Close()
	c.store.Close()
}

// session loads session id, with a message that says what to do when it
// does not exist.
func (c *ownerConsole) session(ctx context.Context, id string) (sessions.Session, error) {
	s, err := c.store.GetSession(ctx, id)
	if errors.Is(err, sessions.ErrNotFound) {
		return sessions.Session{}, fmt.Errorf("session %q not found; list them with `openprogram sessions list`", id)
	}
	if err != nil {
		return sessions.Session{}, fmt.Errorf("load session %q: %w", id, err)
	}
	return s, nil
}

// newSession creates an ordinary session (source cli) titled after text
// and audits who made it.
func (c *ownerConsole) newSession(ctx context.Context, text, command string) (sessions.Session, error) {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	now := time.Now()
	s, err := c.store.CreateSession(ctx, sessions.Session{
		ID: "cli_" + hex.EncodeToString(b[:]), AgentID: ownerAgent, Title: ownerTitle(text), Source: authz.SourceCLI,
		CreatedAt: now, UpdatedAt: now,
	})
	if err != nil {
		return sessions.Session{}, fmt.Errorf("create a session: %w", err)
	}
	c.audit(AuditOwnerSessionCreated, s.ID, OwnerSessionCreatedPayload{
		SessionID: s.ID, Source: authz.SourceCLI, SpeakerID: c.req.Authority.SpeakerID,
		PrincipalID: c.req.Authority.PrincipalID, Command: command,
	})
	return s, nil
}

// ownerTitle is the first line of text, its spaces collapsed, clipped.
func ownerTitle(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	line = strings.Join(strings.Fields(line), " ")
	if line == "" {
		return "Owner session"
	}
	return authz.Clip(line, 60)
}

// turn runs one turn as the owner on s.
// newTurnID returns the request id of an owner turn.
func newTurnID() string { return "cli_turn_" + rand.Text() }

func (c *ownerConsole) turn(ctx context.Context, s sessions.Session, text, requestID string) (runtime.TurnResult, error) {
	return c.rt.ProcessUserTurn(ctx, runtime.TurnRequest{
		SessionID: s.ID, Text: text, AgentID: s.AgentID, Request: c.req, RequestID: requestID,
	})
}

// audit appends an audit record with origin the owner's speaker id; a
// failure is logged, never fatal to the conversation.
func (c *ownerConsole) audit(typ, sessionID string, payload any) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := sessions.AppendAuditPayload(ctx, c.store, typ, c.req.Authority.SpeakerID, sessionID, payload); err != nil {
		c.log.Warn("append audit record failed", "type", typ, "error", err)
	}
}

// validPrompt refuses a blank prompt or one holding U+0000, as prompt_send
// does.
func validPrompt(text string) error {
	if strings.TrimSpace(text) == "" {
		return usagef("the prompt is blank; say something, or pass - to read it from stdin")
	}
	if strings.ContainsRune(text, 0) {
		return usagef("the prompt holds a NUL character (U+0000); remove it")
	}
	return nil
}
