package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openprogram/openprogram/cli/host"
	"github.com/openprogram/openprogram/cli/internal/auditkeys"
	"github.com/openprogram/openprogram/cli/internal/console"
	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/tokenauth"
)

type auditCmd struct {
	Tail   auditTailCmd   `cmd:"" help:"Print the newest audit records."`
	Verify auditVerifyCmd `cmd:"" help:"Verify the keyed audit chain with the audit key (detects edited, deleted, inserted or reordered records and a recomputed chain)."`
	Head   auditHeadCmd   `cmd:"" help:"Verify the audit chain and print its head as <id> <mac>, to keep outside this machine for audit verify --head."`
	// Reanchor is the one command that accepts a log that does not extend
	// the anchor; verify and head stay read-only.
	Reanchor auditReanchorCmd `cmd:"" help:"After a deliberate restore of the store: verify the chain, audit the move and anchor this host to the restored log's head."`
	Keys     auditKeysCmd     `cmd:"" help:"List or revoke the hosts' audit writer keys."`
}

type auditKeysCmd struct {
	List   auditKeysListCmd   `cmd:"" help:"List the audit writer keys the store holds: id, active or revoked, pinned here or not, when added, whose."`
	Revoke auditKeysRevokeCmd `cmd:"" help:"Revoke a host's audit writer key (audited): its writers cannot append any more, and verify names anything they append after."`
}

type auditKeysListCmd struct{}

func (auditKeysListCmd) Run(ctx context.Context, app *App) error {
	_, err := readAppStore(ctx, app, "list the audit writer keys", func(st sessions.Store) (struct{}, error) {
		return struct{}{}, auditkeys.List(ctx, st, app.Stdout)
	})
	return err
}

type auditKeysRevokeCmd struct {
	ID  string `arg:"" name:"key-id" help:"The key's id, as audit keys list prints it."`
	Yes bool   `help:"Confirm: the host holding this key can no longer write audit records, so its prompt_send and tool_call are refused."`
}

func (c *auditKeysRevokeCmd) Run(ctx context.Context, app *App) error {
	if !c.Yes {
		return usagef("audit keys revoke stops the host holding that key from writing audit records; confirm with --yes")
	}
	cfg, _, err := loadAppConfig(app)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, app, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	err = auditkeys.Revoke(ctx, st, c.ID, app.Stdout)
	if errors.Is(err, auditkeys.ErrUsage) {
		return usagef("%v", err)
	}
	return err
}

type auditTailCmd struct {
	N    int  `short:"n" default:"20" help:"How many records (1-10000)."`
	JSON bool `name:"json" help:"Print JSON lines."`
}

func (c *auditTailCmd) Run(ctx context.Context, app *App) error {
	if c.N < 1 || c.N > 10000 {
		return usagef("-n must be between 1 and 10000")
	}
	recs, err := readAppStore(ctx, app, "read the audit log", func(st sessions.Store) ([]sessions.AuditRecord, error) {
		return st.TailAudit(ctx, c.N)
	})
	if err != nil {
		return err
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

type auditVerifyCmd struct {
	Head string `name:"head" placeholder:"ID:MAC" help:"Also prove that the log still extends this head, printed earlier by audit head (catches truncation even by a holder of the key). The log is always compared with this host's anchor."`
}

func (c *auditVerifyCmd) Run(ctx context.Context, app *App) error {
	var given *sessions.AuditHead
	if c.Head != "" {
		a, err := parseAuditHead(c.Head)
		if err != nil {
			return err
		}
		given = &a
	}
	st, rep, err := verifyAudit(ctx, app, given)
	if err != nil {
		return err
	}
	st.Close()
	if given != nil {
		_, err = fmt.Fprintf(app.Stdout, "audit log intact: %d records, extends head %d\n", rep.Records, given.ID)
		return err
	}
	_, err = fmt.Fprintf(app.Stdout, "audit log intact: %d records\n", rep.Records)
	return err
}

type auditHeadCmd struct{}

func (auditHeadCmd) Run(ctx context.Context, app *App) error {
	st, _, err := verifyAudit(ctx, app, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	recs, err := st.TailAudit(ctx, 1)
	if err != nil {
		return fmt.Errorf("read the audit head: %w", err)
	}
	if len(recs) == 0 {
		return errors.New("the audit log has no records yet: nothing to anchor")
	}
	_, err = fmt.Fprintf(app.Stdout, "%d %s\n", recs[0].ID, recs[0].Hash)
	return err
}

type auditReanchorCmd struct {
	Yes bool `help:"Confirm: accept the store's audit log as it is, although it does not extend this host's anchor."`
}

// auditReanchored is the audit record of a deliberate move of the anchor.
const auditReanchored = sessions.AuditReanchored

// reanchoredPayload is its payload: the anchor given up ("" when there was
// none, or the file was unreadable) and the head the log had before this
// record.
type reanchoredPayload struct {
	Previous string `json:"previous"`
	Head     string `json:"head"`
}

// Run verifies the chain, appends audit.reanchored and writes the new head
// to the anchor file, in that order: the anchor always names a record of a
// verified log that says why it was moved.
func (c *auditReanchorCmd) Run(ctx context.Context, app *App) error {
	if !c.Yes {
		return usagef("audit reanchor accepts a store whose audit log does not extend this host's anchor (after a deliberate restore); confirm with --yes")
	}
	st, _, err := verifyAuditAnchored(ctx, app, nil, false)
	if err != nil {
		return err
	}
	defer st.Close()
	dir, err := app.StateDir()
	if err != nil {
		return err
	}
	path := tokenauth.AnchorPath(dir)
	previous := ""
	if old, err := host.ReadAnchor(path); err != nil {
		fmt.Fprintf(app.Stderr, "note: the old anchor is unreadable and is replaced: %s\n", console.OneLine(err.Error()))
	} else if old != nil {
		previous = host.FormatHead(*old)
	}
	head, err := st.CheckAuditAnchor(ctx, nil)
	if err != nil {
		return fmt.Errorf("read the audit head: %w", err)
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	rec, err := sessions.AppendAuditPayload(actx, st, auditReanchored, "cli", "", reanchoredPayload{Previous: previous, Head: host.FormatHead(head)})
	if err != nil {
		return fmt.Errorf("append the audit.reanchored record: %w; the anchor was not moved", err)
	}
	moved := sessions.AuditHead{ID: rec.ID, MAC: rec.Hash}
	if err := tokenauth.WriteAnchor(path, []byte(host.FormatHead(moved))); err != nil {
		return fmt.Errorf("write the audit anchor: %w", err)
	}
	_, err = fmt.Fprintf(app.Stdout, "audit anchor moved to record %d (audit.reanchored)\n", moved.ID)
	return err
}

// verifyAudit opens the store with the audit key and verifies the chain
// against this host's anchor (the audit_anchor file, when there is one)
// and against given (a head the caller names, when not nil). On success
// the caller closes the store; a broken chain, or one that does not extend
// an anchor, is an error naming the first bad record.
func verifyAudit(ctx context.Context, app *App, given *sessions.AuditHead) (sessions.Store, sessions.AuditReport, error) {
	return verifyAuditAnchored(ctx, app, given, true)
}

// verifyAuditAnchored is verifyAudit; withLocal false leaves this host's
// anchor out (audit reanchor, which replaces it).
func verifyAuditAnchored(ctx context.Context, app *App, given *sessions.AuditHead, withLocal bool) (sessions.Store, sessions.AuditReport, error) {
	var local *sessions.AuditHead
	anchorPath := ""
	if withLocal {
		dir, err := app.StateDir()
		if err != nil {
			return nil, sessions.AuditReport{}, err
		}
		anchorPath = tokenauth.AnchorPath(dir)
		if local, err = host.ReadAnchor(anchorPath); err != nil {
			return nil, sessions.AuditReport{}, fmt.Errorf("verify the audit log: %w", err)
		}
	}
	// Audit reanchor accepts a restored log, which may predate keys
	// pinned since: it verifies without the pins.
	_, st, err := openAppStoreWith(ctx, app, host.StoreOptions{Unpinned: !withLocal})
	if err != nil {
		return nil, sessions.AuditReport{}, err
	}
	first := given
	if first == nil {
		first = local
	}
	rep, err := st.VerifyAudit(ctx, first)
	if err != nil {
		st.Close()
		if errors.Is(err, sessions.ErrAuditKey) {
			dir, _ := app.StateDir()
			return nil, rep, fmt.Errorf("verify the audit log: no audit key at %s and no signing key at %s: both are created by the first `openprogram mcp serve` on this state directory (a host joining a shared PostgreSQL store needs no file from another host): %w",
				tokenauth.KeyPath(dir), tokenauth.SigningKeyPath(dir), err)
		}
		return nil, rep, fmt.Errorf("verify the audit log: %w", err)
	}
	if !rep.OK {
		st.Close()
		if first == local && local != nil && given == nil {
			return nil, rep, fmt.Errorf("audit log broken at record %d: %s (%d records checked, against this host's anchor %s in %s; after a deliberate restore of the store: openprogram audit reanchor --yes)",
				rep.FirstBadID, rep.Problem, rep.Records, host.FormatHead(*local), anchorPath)
		}
		return nil, rep, fmt.Errorf("audit log broken at record %d: %s (%d records checked)", rep.FirstBadID, rep.Problem, rep.Records)
	}
	if withLocal {
		dir, _ := app.StateDir()
		if err := auditkeys.PinNew(tokenauth.PinsPath(dir), rep, app.Stderr); err != nil {
			st.Close()
			return nil, rep, err
		}
	}
	if local != nil && first != local {
		// The chain verified whole; the anchor needs its record only.
		if _, err := st.CheckAuditAnchor(ctx, local); err != nil {
			st.Close()
			return nil, rep, fmt.Errorf("the audit log does not extend this host's anchor %s in %s: %w (after a deliberate restore of the store: openprogram audit reanchor --yes)",
				host.FormatHead(*local), anchorPath, err)
		}
	}
	return st, rep, nil
}

// parseAuditHead parses the <id>:<mac> form of --head (the two fields
// audit head prints, joined by a colon).
func parseAuditHead(s string) (sessions.AuditHead, error) {
	h, err := host.ParseHead(s)
	if err != nil {
		return sessions.AuditHead{}, usagef("--head: %v", err)
	}
	return h, nil
}
