package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

type auditCmd struct {
	Tail   auditTailCmd   `cmd:"" help:"Print the newest audit records."`
	Verify auditVerifyCmd `cmd:"" help:"Verify the audit hash chain (detects edited, deleted or reordered records)."`
}

type auditTailCmd struct {
	N    int  `short:"n" default:"20" help:"How many records (1-10000)."`
	JSON bool `name:"json" help:"Print JSON lines."`
}

func (c *auditTailCmd) Run(ctx context.Context, app *App) error {
	if c.N < 1 || c.N > 10000 {
		return usagef("-n must be between 1 and 10000")
	}
	_, st, err := openAppStore(ctx, app)
	if err != nil {
		return err
	}
	defer st.Close()
	recs, err := st.TailAudit(ctx, c.N)
	if err != nil {
		return fmt.Errorf("read the audit log: %w", err)
	}
	for _, r := range recs {
		if c.JSON {
			line, err := json.Marshal(map[string]any{"id": r.ID, "ts": r.TS.UTC().Format(time.RFC3339Nano), "type": r.Type,
				"origin": r.Origin, "session_id": r.SessionID, "payload": r.Payload, "hash": r.Hash})
			if err != nil {
				return fmt.Errorf("encode audit record %d: %w", r.ID, err)
			}
			fmt.Fprintln(app.Stdout, string(line))
			continue
		}
		fmt.Fprintf(app.Stdout, "%d  %s  %-24s %-10s %s %s\n", r.ID, r.TS.Local().Format(time.DateTime), r.Type, r.Origin, r.SessionID, string(r.Payload))
	}
	return nil
}

type auditVerifyCmd struct{}

func (auditVerifyCmd) Run(ctx context.Context, app *App) error {
	_, st, err := openAppStore(ctx, app)
	if err != nil {
		return err
	}
	defer st.Close()
	rep, err := st.VerifyAudit(ctx)
	if err != nil {
		return fmt.Errorf("verify the audit log: %w", err)
	}
	if !rep.OK {
		return fmt.Errorf("audit log broken at record %d: %s (%d records checked)", rep.FirstBadID, rep.Problem, rep.Records)
	}
	_, err = fmt.Fprintf(app.Stdout, "audit log intact: %d records\n", rep.Records)
	return err
}
