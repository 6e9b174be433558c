package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/openprogram/openprogram/cli/internal/console"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/sessions"
)

// jsonLines prints one JSON line for each item, without HTML escaping.
func jsonLines[T any](w io.Writer, items []T, line func(T) any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, it := range items {
		if err := enc.Encode(line(it)); err != nil {
			return err
		}
	}
	return nil
}

type sessionsCmd struct {
	List sessionsListCmd `cmd:"" help:"List the most recently updated sessions."`
	Show sessionsShowCmd `cmd:"" help:"Show the active branch of a session."`
}

type sessionsListCmd struct {
	Limit int  `short:"n" default:"100" help:"How many sessions (1-1000)."`
	JSON  bool `name:"json" help:"Print JSON lines."`
}

func (c *sessionsListCmd) Run(ctx context.Context, app *App) error {
	if c.Limit < 1 || c.Limit > 1000 {
		return usagef("--limit must be between 1 and 1000")
	}
	list, err := readAppStore(ctx, app, "list sessions", func(st sessions.Store) ([]sessions.Session, error) {
		return st.ListSessions(ctx, c.Limit)
	})
	if err != nil {
		return err
	}
	if c.JSON {
		return jsonLines(app.Stdout, list, func(s sessions.Session) any {
			return map[string]any{"id": s.ID, "title": s.Title, "agent_id": s.AgentID,
				"source": s.Source, "updated_at": s.UpdatedAt.Unix(), "created_at": s.CreatedAt.Unix()}
		})
	}
	tw := tabwriter.NewWriter(app.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUPDATED\tSOURCE\tTITLE")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.ID, s.UpdatedAt.Local().Format(time.DateTime), s.Source, console.Printable(console.OneLine(s.Title)))
	}
	return tw.Flush()
}

type sessionsShowCmd struct {
	ID   string `arg:"" help:"The session id."`
	JSON bool   `name:"json" help:"Print JSON lines."`
}

func (c *sessionsShowCmd) Run(ctx context.Context, app *App) error {
	_, st, err := openAppStore(ctx, app)
	if err != nil {
		return err
	}
	defer st.Close()
	s, err := st.GetSession(ctx, c.ID)
	if errors.Is(err, sessions.ErrNotFound) {
		return fmt.Errorf("session %q not found; list them with `openprogram sessions list`", c.ID)
	}
	if err != nil {
		return fmt.Errorf("load session %q: %w", c.ID, err)
	}
	branch, err := st.Branch(ctx, c.ID)
	if err != nil {
		return fmt.Errorf("load session %q: %w", c.ID, err)
	}
	if c.JSON {
		return jsonLines(app.Stdout, branch, func(m sessions.Message) any {
			line := map[string]any{"id": m.ID, "role": m.Role, "content": m.Content, "timestamp": m.CreatedAt.Unix()}
			if u := runtime.UsageOf(m.Metadata); u != nil {
				line["usage"] = u
			}
			return line
		})
	}
	fmt.Fprintf(app.Stdout, "session %s  agent=%s  source=%s  title=%q\n", s.ID, s.AgentID, s.Source, s.Title)
	fmt.Fprintln(app.Stdout, usageLine(branch))
	for _, m := range branch {
		// What a model or a client wrote passes the one sanitiser of
		// terminal output, as in chat and prompt.
		fmt.Fprintf(app.Stdout, "\n[%s] %s  %s\n%s\n", m.Role, m.ID, m.CreatedAt.Local().Format(time.DateTime), console.Printable(m.Content))
	}
	return nil
}

// usageLine totals the token usage recorded on a branch's messages.
func usageLine(branch []sessions.Message) string {
	var in, out, calls int
	for _, m := range branch {
		if u := runtime.UsageOf(m.Metadata); u != nil {
			in += u.InputTokens
			out += u.OutputTokens
			calls++
		}
	}
	if calls == 0 {
		return "tokens: none reported"
	}
	return fmt.Sprintf("tokens: %d input, %d output over %d model calls", in, out, calls)
}
