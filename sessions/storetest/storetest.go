package storetest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/openprogram/openprogram/sessions/internal/auditchain"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/openprogram/openprogram/sessions"
)

// Tamperer edits a backend's audit tables behind the Store's back, the way
// an attacker with write access to the database (but not the key file)
// would: past the append-only triggers. Ids are audit record ids.
type Tamperer interface {
	// EditAuditPayload overwrites the stored payload of record id, leaving
	// its hashes as they were.
	EditAuditPayload(ctx context.Context, id int64, payload string) error
	// DeleteAudit deletes record id.
	DeleteAudit(ctx context.Context, id int64) error
	// SwapAudit exchanges every stored column but the id between records a
	// and b (their hashes included), reordering the chain.
	SwapAudit(ctx context.Context, a, b int64) error
	// InsertAudit stores r as it is: its id, hashes and all.
	InsertAudit(ctx context.Context, r sessions.AuditRecord) error
	// RewriteAudit overwrites every stored column of record r.ID with r's.
	RewriteAudit(ctx context.Context, r sessions.AuditRecord) error
	// AuditHead reads the stored chain head; SetAuditHead overwrites it.
	AuditHead(ctx context.Context) (HeadRow, error)
	SetAuditHead(ctx context.Context, h HeadRow) error
}

// HeadRow is the stored audit chain head: the last record's id and MAC, the
// id of the chain's key ("" while unkeyed) and the head's seal.
type HeadRow struct {
	LastID   int64
	LastHash string
	KeyID    string
	MAC      string
}

// Key is the audit key the suite opens its stores with, unless a test says
// otherwise.
var Key = bytes.Repeat([]byte{0x5a}, 32)

// SigningKey returns the writer signing key of host i of the suite (a
// fixed key per i).
func SigningKey(i byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0xc0 + i}, ed25519.SeedSize))
}

// WriterTamperer is what a [Tamperer] also does for the writer-chain
// tests: read, overwrite or delete a writer's stored head and a writer
// key's row, past the store.
type WriterTamperer interface {
	AuditWriters(ctx context.Context) ([]auditchain.Writer, error)
	// SetAuditWriter overwrites every column of writer w.ID's head.
	SetAuditWriter(ctx context.Context, w auditchain.Writer) error
	DeleteAuditWriter(ctx context.Context, id string) error
	// SetAuditKeyRow overwrites the public key and the revoked mark of
	// key k.ID.
	SetAuditKeyRow(ctx context.Context, k sessions.AuditKey) error
	DeleteAuditKeyRow(ctx context.Context, id string) error
}

// Option configures Run.
type Option func(*config)

type config struct {
	second func(t *testing.T, s sessions.Store, opts *sessions.Options) sessions.Store
	tamper func(t *testing.T, s sessions.Store) Tamperer
}

// WithSecondHandle supplies a second, independent handle (its own
// connection pool, as another process would have) on the database behind s,
// opened with opts. The lease-contention, cross-handle concurrency, key and
// re-key tests need it; without it they fail. The function registers the
// handle's Close with t.Cleanup.
func WithSecondHandle(second func(t *testing.T, s sessions.Store, opts *sessions.Options) sessions.Store) Option {
	return func(c *config) { c.second = second }
}

// WithTamperer supplies raw write access to the audit table behind s for
// the audit tamper tests; without it they fail.
func WithTamperer(tamper func(t *testing.T, s sessions.Store) Tamperer) Option {
	return func(c *config) { c.tamper = tamper }
}

// Run runs the conformance suite. open must return a new, empty store (its
// own database) opened with opts, and register its Close with t.Cleanup; Run
// calls it once per subtest, mostly with [Key] as the audit key. Backends
// call it from a test:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, openTemp,
//			storetest.WithSecondHandle(reopen),
//			storetest.WithTamperer(tamperer))
//	}
func Run(t *testing.T, open func(t *testing.T, opts *sessions.Options) sessions.Store, opts ...Option) {
	t.Helper()
	var c config
	for _, o := range opts {
		o(&c)
	}
	h := &harness{open: open, cfg: c}
	groups := []struct {
		name  string
		tests []test
	}{
		{"Sessions", sessionTests},
		{"Messages", messageTests},
		{"Lease", leaseTests},
		{"Memory", memoryTests},
		{"Allowances", allowanceTests},
		{"Audit", auditTests},
		{"AuditWriters", writerTests},
		{"Text", textTests},
		{"Tasks", taskTests},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, h) })
			}
		})
	}
}

type test struct {
	name string
	fn   func(t *testing.T, h *harness)
}

type harness struct {
	open func(t *testing.T, opts *sessions.Options) sessions.Store
	cfg  config
}

// store opens a fresh store keyed with Key.
func (h *harness) store(t *testing.T) sessions.Store {
	t.Helper()
	return h.storeWith(t, &sessions.Options{AuditKey: Key})
}

func (h *harness) storeWith(t *testing.T, opts *sessions.Options) sessions.Store {
	t.Helper()
	s := h.open(t, opts)
	if s == nil {
		t.Fatal("storetest: open returned a nil Store")
	}
	return s
}

// pair returns two independent handles on one fresh database.
func (h *harness) pair(t *testing.T) (a, b sessions.Store) {
	t.Helper()
	a = h.store(t)
	return a, h.reopen(t, a, &sessions.Options{AuditKey: Key})
}

// reopen returns another handle on the database behind s, opened with opts.
func (h *harness) reopen(t *testing.T, s sessions.Store, opts *sessions.Options) sessions.Store {
	t.Helper()
	if h.cfg.second == nil {
		t.Fatal("storetest: this test needs a second handle on the same database; pass storetest.WithSecondHandle to Run")
	}
	b := h.cfg.second(t, s, opts)
	if b == nil {
		t.Fatal("storetest: WithSecondHandle returned a nil Store")
	}
	return b
}

func (h *harness) tamperer(t *testing.T, s sessions.Store) Tamperer {
	t.Helper()
	if h.cfg.tamper == nil {
		t.Fatal("storetest: audit tamper tests need raw table access; pass storetest.WithTamperer to Run")
	}
	return h.cfg.tamper(t, s)
}

func ctxT(t *testing.T) context.Context {
	return t.Context()
}

// timeTolerance absorbs storage precision (microseconds or coarser) and
// time zone: stores may return UTC.
const timeTolerance = time.Millisecond

var cmpOpts = []cmp.Option{
	cmpopts.EquateApproxTime(timeTolerance),
	cmp.Comparer(jsonEqual),
	// nil and empty slices are equal, except JSON documents (compared above).
	cmp.FilterValues(func(x, y any) bool {
		_, isJSON := x.(json.RawMessage)
		return !isJSON
	}, cmpopts.EquateEmpty()),
}

// jsonEqual compares JSON documents by value: backends may normalise
// whitespace and key order.
func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return string(a) == string(b)
	}
	return cmp.Equal(va, vb)
}

// noErr fails the test at once when err is not nil; format and args name
// the call that failed.
func noErr(t *testing.T, err error, format string, args ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s error: %v", fmt.Sprintf(format, args...), err)
	}
}

// wantErr fails the test unless err is want (errors.Is); what names the
// call.
func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s error = %v, want %v", what, err, want)
	}
}

// race runs n contenders released together, each contend(i), and returns
// how many succeeded and every contender's error. A contender fails with
// lost or not at all; any other error fails the test, naming the
// contender "<who> <i>".
func race(t *testing.T, n int, who string, lost error, contend func(i int) error) (wins int, errs []error) {
	t.Helper()
	errs = make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = contend(i)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, lost):
			t.Errorf("%s %d: error = %v, want nil or %v", who, i, err, lost)
		}
	}
	return wins, errs
}

func mustCreate(t *testing.T, s sessions.Store, sess sessions.Session) sessions.Session {
	t.Helper()
	got, err := s.CreateSession(ctxT(t), sess)
	noErr(t, err, "CreateSession(%q)", sess.ID)
	return got
}

func mustAppend(t *testing.T, s sessions.Store, sessionID, parentID string, moveHead bool, msgs ...sessions.NewMessage) []sessions.Message {
	t.Helper()
	got, err := s.AppendMessages(ctxT(t), sessionID, parentID, msgs, moveHead)
	noErr(t, err, "AppendMessages(%q, %q, %d msgs)", sessionID, parentID, len(msgs))
	if len(got) != len(msgs) {
		t.Fatalf("AppendMessages returned %d messages, want %d", len(got), len(msgs))
	}
	return got
}

func mustGetSession(t *testing.T, s sessions.Store, id string) sessions.Session {
	t.Helper()
	got, err := s.GetSession(ctxT(t), id)
	noErr(t, err, "GetSession(%q)", id)
	return got
}

func user(content string) sessions.NewMessage {
	return sessions.NewMessage{Role: sessions.RoleUser, Content: content}
}

func assistant(content string) sessions.NewMessage {
	return sessions.NewMessage{Role: sessions.RoleAssistant, Content: content}
}

// pluck returns field of each x, in order (never nil).
func pluck[T any](xs []T, field func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = field(x)
	}
	return out
}

func ids(msgs []sessions.Message) []string {
	return pluck(msgs, func(m sessions.Message) string { return m.ID })
}

func sessionIDs(ss []sessions.Session) []string {
	return pluck(ss, func(s sessions.Session) string { return s.ID })
}

// wantBranch fails the test unless the branch of session id holds the
// messages want, root first; what says when it is read.
func wantBranch(t *testing.T, s sessions.Store, id, what string, want ...string) {
	t.Helper()
	branch, err := s.Branch(ctxT(t), id)
	noErr(t, err, "Branch %s", what)
	if diff := cmp.Diff(want, ids(branch)); diff != "" {
		t.Errorf("Branch %s (-want +got):\n%s", what, diff)
	}
}
