// Package auditkeys is what `openprogram audit keys` and the writer-key
// part of `openprogram audit verify` do: list the audit writer keys a store
// holds, revoke one (an audited act), and pin the keys a verify saw for the
// first time in the state directory's pins file.
package auditkeys

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/openprogram/openprogram/cli/host"
	"github.com/openprogram/openprogram/cli/internal/console"
	"github.com/openprogram/openprogram/sessions"
)

// List prints every writer key st holds, one line each: id, whether it is
// revoked and pinned, when it was added, and its label.
func List(ctx context.Context, st sessions.Store, out io.Writer) error {
	keys, err := st.AuditKeys(ctx)
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		_, err := fmt.Fprintln(out, "no audit writer keys yet: the first `openprogram mcp serve` of a host records its key")
		return err
	}
	for _, k := range keys {
		state := "active"
		if k.Revoked {
			state = "revoked"
		}
		pinned := "pinned"
		if !k.Pinned {
			pinned = "not pinned"
		}
		if _, err := fmt.Fprintf(out, "%s  %-7s  %-10s  %s  %s\n", k.ID, state, pinned, k.Added.Local().Format(time.DateTime),
			console.OneLine(console.Printable(k.Label))); err != nil {
			return err
		}
	}
	return nil
}

// keyID is the form of a key id.
var keyID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// ErrUsage marks a key id that is not one.
var ErrUsage = errors.New("a key id is 32 lowercase hex digits, as `openprogram audit keys list` prints it")

// Revoke revokes key id in st: an audit.key.revoked record in this host's
// writer chain, after which the key's writers cannot append.
func Revoke(ctx context.Context, st sessions.Store, id string, out io.Writer) error {
	if !keyID.MatchString(id) {
		return ErrUsage
	}
	rec, err := st.RevokeAuditKey(ctx, id)
	if errors.Is(err, sessions.ErrNotFound) {
		return fmt.Errorf("the store holds no audit writer key %s (see `openprogram audit keys list`): %w", id, err)
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "audit writer key %s revoked (audit record %d, audit.key.revoked)\n", id, rec.ID)
	return err
}

// PinNew pins, in the pins file at path, the keys of a verified log not
// pinned yet, and says so on out (one line each) with the notes of the
// verification.
func PinNew(path string, rep sessions.AuditReport, out io.Writer) error {
	added, err := host.AddPins(path, rep.Keys)
	if err != nil {
		return err
	}
	for _, k := range added {
		fmt.Fprintf(out, "pinned audit writer key %s (%s): it was not pinned on this host; if you do not know it, revoke it with `openprogram audit keys revoke %s`\n",
			k.ID, console.OneLine(console.Printable(k.Label)), k.ID)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(out, "note: %s\n", n)
	}
	return nil
}
