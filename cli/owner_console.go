package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/cli/host"
	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/questions"
	"github.com/openprogram/openprogram/sessions"
)

// Audit record types the owner's console writes (origin "owner").
const (
	// AuditOwnerApproval records an approval the owner granted or denied
	// in `openprogram chat`: tool, decision and session, never arguments.
	AuditOwnerApproval = sessions.AuditOwnerApproval
	// AuditOwnerSessionCreated records a session `chat` or `prompt` made.
	AuditOwnerSessionCreated = sessions.AuditOwnerSessionCreated
)

// Decisions of an [OwnerApprovalPayload] (the owner's room, cli/host).
const (
	DecisionAllowOnce    = host.DecisionAllowOnce
	DecisionAllowSession = host.DecisionAllowSession
	DecisionDeny         = host.DecisionDeny
)

// OwnerApprovalPayload is the payload of [AuditOwnerApproval]
// (host.OwnerApprovalPayload).
type OwnerApprovalPayload = host.OwnerApprovalPayload

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

// ownerConsole is what `chat` and `prompt` share: the host and the
// owner's speaker (source cli, owner tier).
type ownerConsole struct {
	host  *host.Host
	owner host.Speaker
	qs    *questions.Registry // the host's for chat; nil for prompt: nobody answers
	log   *slog.Logger
}

// openOwnerConsole builds the host and the owner's speaker. Interactive
// consoles answer approval questions; a non-interactive one has approvals
// denied at once, like MCP. The working directories are config
// agent.work_dirs, or the current directory when that is empty.
func openOwnerConsole(ctx context.Context, app *App, interactive bool) (*ownerConsole, error) {
	dir, err := app.StateDir()
	if err != nil {
		return nil, err
	}
	wd, wdErr := currentDir()
	// A terminal may be slower than the model: room for long replies.
	h, err := openHost(ctx, app, dir, host.Options{EventBuffer: 4096})
	if err != nil {
		return nil, err
	}
	if err := h.ProviderErr(); err != nil {
		app.Logger.Debug("no model provider: turns will complete with failed:true", "why", err.Error())
	}
	owner, err := h.Owner(host.OwnerOptions{Interactive: interactive, WorkDir: wd})
	if err != nil {
		h.Close()
		if wdErr != nil {
			return nil, wdErr
		}
		return nil, err
	}
	oc := &ownerConsole{host: h, owner: owner, log: app.Logger}
	if interactive {
		oc.qs = h.Questions()
	}
	return oc, nil
}

func (c *ownerConsole) Close() { c.host.Close() }

// session loads session id, with a message that says what to do when it
// does not exist.
func (c *ownerConsole) session(ctx context.Context, id string) (sessions.Session, error) {
	s, err := c.host.Store().GetSession(ctx, id)
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
	s, err := c.host.Store().CreateSession(ctx, sessions.Session{
		ID: "cli_" + hex.EncodeToString(b[:]), AgentID: ownerAgent, Title: sessions.Title(text, "Owner session"), Source: authz.SourceCLI,
		CreatedAt: now, UpdatedAt: now,
	})
	if err != nil {
		return sessions.Session{}, fmt.Errorf("create a session: %w", err)
	}
	c.audit(AuditOwnerSessionCreated, s.ID, OwnerSessionCreatedPayload{
		SessionID: s.ID, Source: authz.SourceCLI, SpeakerID: c.owner.Request.Authority.SpeakerID,
		PrincipalID: c.owner.Request.Authority.PrincipalID, Command: command,
	})
	return s, nil
}

// turn runs one turn as the owner on s.
// newTurnID returns the request id of an owner turn.
func newTurnID() string { return "cli_turn_" + rand.Text() }

func (c *ownerConsole) turn(ctx context.Context, s sessions.Session, text, requestID string) (runtime.TurnResult, error) {
	return c.host.Runtime().ProcessUserTurn(ctx, runtime.TurnRequest{
		SessionID: s.ID, Text: text, AgentID: s.AgentID, Request: c.owner.Request, RequestID: requestID,
	})
}

// audit appends an audit record with origin the owner's speaker id; a
// failure is logged, never fatal to the conversation.
func (c *ownerConsole) audit(typ, sessionID string, payload any) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := sessions.AppendAuditPayload(ctx, c.host.Store(), typ, c.owner.Request.Authority.SpeakerID, sessionID, payload); err != nil {
		c.log.Warn("append audit record failed", "type", typ, "error", err)
	}
}

// validPrompt refuses what prompt_send refuses: the rule is contracts'
// (prompt_send's frozen schema and its U+0000 check), said the console's way.
func validPrompt(text string) error {
	args, err := json.Marshal(contracts.PromptSendArgs{Prompt: text})
	if err != nil {
		return fmt.Errorf("encode the prompt: %w", err)
	}
	if _, err := contracts.Validate(contracts.PromptSend, args); err == nil {
		return nil
	}
	if strings.ContainsRune(text, 0) {
		return usagef("the prompt holds a NUL character (U+0000); remove it")
	}
	return usagef("the prompt is blank; say something, or pass - to read it from stdin")
}
