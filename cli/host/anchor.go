package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openprogram/openprogram/internal/clip"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/tokenauth"
)

// anchorInterval is how often a store opened to write moves the audit
// anchor to its sealed head while it stays open; Close moves it once more.
const anchorInterval = time.Minute

// anchoredStore is a store opened to write, held to the audit anchor of
// its state directory (tokenauth.AnchorFileName): the last sealed head
// this host saw. Every front end that writes (mcp serve, chat, prompt,
// mcp token rotate) opens it through OpenStore with Create, so the check at
// start and the moves of the anchor live here alone. Appends are not touched: the
// anchor follows the head the store reports.
type anchoredStore struct {
	sessions.Store
	path string
	log  *slog.Logger

	mu        sync.Mutex // one move of the anchor at a time
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// holdAnchor checks that st's audit log extends the anchor at path (when
// there is one), moves the anchor to the log's head, and keeps moving it
// every anchorInterval and on Close. A log that does not extend the anchor
// (emptied, replaced, cut back) is refused with an error naming the checks
// to run and `audit reanchor --yes`. A log the store cannot check (no key,
// a head that fails its seal) is let through with a warning: its appends
// are refused anyway, and the anchor does not move.
func holdAnchor(ctx context.Context, st sessions.Store, path string, log *slog.Logger) (*anchoredStore, error) {
	a := &anchoredStore{Store: st, path: path, log: log, stop: make(chan struct{}), done: make(chan struct{})}
	if err := a.move(ctx); err != nil {
		if errors.Is(err, sessions.ErrAuditAnchor) || errors.Is(err, tokenauth.ErrAnchorUnavailable) {
			return nil, err
		}
		log.Warn("the audit anchor was not checked: the audit log cannot be extended either; run `openprogram audit verify`", "error", err)
	}
	go a.loop()
	return a, nil
}

func (a *anchoredStore) loop() {
	defer close(a.done)
	t := time.NewTicker(anchorInterval)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
			a.moveLogged()
		}
	}
}

// moveLogged moves the anchor, logging a failure: after the start, a
// failure to move it leaves the older anchor in place, which still holds.
func (a *anchoredStore) moveLogged() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.move(ctx); err != nil {
		a.log.Warn("the audit anchor was not moved", "path", a.path, "error", err)
	}
}

// move re-reads the anchor (other processes of this host move it too),
// checks that the log extends it, and writes the log's sealed head in its
// place when that is newer. It never moves the anchor back, and never
// onto a log that does not extend it.
func (a *anchoredStore) move(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	anchor, err := ReadAnchor(a.path)
	if err != nil {
		return err
	}
	head, err := a.Store.CheckAuditAnchor(ctx, anchor)
	if errors.Is(err, sessions.ErrAuditAnchor) {
		return anchorMismatch(a.path, anchor, err)
	}
	if err != nil {
		return err
	}
	if head.ID == 0 || (anchor != nil && head.ID <= anchor.ID) {
		return nil
	}
	if err := tokenauth.WriteAnchor(a.path, []byte(FormatHead(head))); err != nil {
		return fmt.Errorf("write the audit anchor: %w", err)
	}
	return nil
}

// Close moves the anchor a last time, then closes the store.
func (a *anchoredStore) Close() error {
	a.closeOnce.Do(func() {
		close(a.stop)
		<-a.done
		a.moveLogged()
		a.closeErr = a.Store.Close()
	})
	return a.closeErr
}

// ReadAnchor returns the anchor at path, or nil when there is none yet
// (a new install, or one from before anchors).
func ReadAnchor(path string) (*sessions.AuditHead, error) {
	text, err := tokenauth.ReadAnchor(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the audit anchor: %w", err)
	}
	h, err := ParseHead(string(text))
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %w (after a deliberate restore of the store: openprogram audit reanchor --yes)", tokenauth.ErrAnchorUnavailable, path, err)
	}
	return &h, nil
}

// anchorMismatch is the refusal of a log that does not extend the anchor.
func anchorMismatch(path string, anchor *sessions.AuditHead, cause error) error {
	return fmt.Errorf("the audit log does not extend the anchor in %s (record %d): %w; "+
		"if the store was emptied or replaced behind openprogram's back, keep it for investigation and check it with "+
		"`openprogram audit verify --head %s`; after a deliberate restore of the store, accept it with `openprogram audit reanchor --yes`",
		path, anchor.ID, cause, FormatHead(*anchor))
}

// FormatHead is the <id>:<mac> form of a head: what audit verify --head
// takes and the anchor file holds.
func FormatHead(h sessions.AuditHead) string {
	return strconv.FormatInt(h.ID, 10) + ":" + h.MAC
}

// ParseHead parses the <id>:<mac> form of a head ([FormatHead]).
func ParseHead(s string) (sessions.AuditHead, error) {
	idText, mac, ok := strings.Cut(s, ":")
	id, err := strconv.ParseInt(idText, 10, 64)
	if !ok || err != nil || id < 1 || idText != strconv.FormatInt(id, 10) {
		return sessions.AuditHead{}, fmt.Errorf("want <id>:<mac> as printed by `openprogram audit head` (id a positive number), got %q", clip.String(s, 100))
	}
	if len(mac) != 64 || strings.Trim(mac, "0123456789abcdef") != "" {
		return sessions.AuditHead{}, fmt.Errorf("%d:...: the MAC must be 64 lowercase hex digits as printed by `openprogram audit head`", id)
	}
	return sessions.AuditHead{ID: id, MAC: mac}, nil
}
