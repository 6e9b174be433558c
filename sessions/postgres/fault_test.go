package postgres_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/postgres"

	"github.com/openprogram/openprogram/sessions/postgres/pgtest"
)

// Reconnect: an administrator (or a server restart) kills every backend of
// the store's pool between two calls; the next call of every kind succeeds.
func TestReconnectAfterTerminate(t *testing.T) {
	db := newTestDB(t)
	st := openStore(t, db)
	ctx := t.Context()
	if _, err := st.CreateSession(ctx, sessions.Session{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	// Fill the pool with several idle connections, all about to die.
	fillPool(t, st)

	head := ""
	calls := []struct {
		name string
		call func() error
	}{
		{"GetSession", func() error { _, err := st.GetSession(ctx, "s"); return err }},
		{"ListSessions", func() error { _, err := st.ListSessions(ctx, 10); return err }},
		{"AppendMessages", func() error {
			m, err := st.AppendMessages(ctx, "s", head, []sessions.NewMessage{{Role: sessions.RoleUser, Content: "q"}}, true)
			if err == nil {
				head = m[0].ID
			}
			return err
		}},
		{"Branch", func() error { _, err := st.Branch(ctx, "s"); return err }},
		{"AcquireTurn", func() error { return st.AcquireTurn(ctx, "s", "me", time.Minute) }},
		{"RenewTurn", func() error { return st.RenewTurn(ctx, "s", "me", time.Minute) }},
		{"ReleaseTurn", func() error { return st.ReleaseTurn(ctx, "s", "me") }},
		{"AppendSource", func() error {
			_, err := st.AppendSource(ctx, sessions.NewSource{Path: "p", Content: "words"}, -1)
			return err
		}},
		{"SearchMemory", func() error { _, err := st.SearchMemory(ctx, "words", 5, ""); return err }},
		{"AppendAudit", func() error { _, err := st.AppendAudit(ctx, sessions.NewAuditRecord{Type: "t"}); return err }},
		{"VerifyAudit", func() error { _, err := st.VerifyAudit(ctx, nil); return err }},
	}
	for _, c := range calls {
		if n := db.terminate(t); n == 0 {
			t.Fatalf("before %s: no backend of %s to terminate", c.name, db.AppName)
		}
		if err := c.call(); err != nil {
			t.Errorf("%s right after pg_terminate_backend error: %v, want success", c.name, err)
		}
	}
	branch, err := st.Branch(ctx, "s")
	if err != nil || len(branch) != 1 || branch[0].ID != head {
		t.Errorf("Branch after the restarts = %d msgs, %v; want the one appended message", len(branch), err)
	}
	if rep, err := st.VerifyAudit(ctx, nil); err != nil || !rep.OK || rep.Records != 2 {
		t.Errorf("VerifyAudit = %+v, %v; want the key record and one more, intact", rep, err)
	}
}

// Connections killed while the store is busy: calls in flight may fail
// (an ambiguous COMMIT is reported, never guessed), but nothing is half
// written, and the next call succeeds.
func TestTerminateUnderLoad(t *testing.T) {
	db := newTestDB(t)
	st := openStore(t, db)
	ctx := t.Context()
	const workers = 6
	for w := range workers {
		if _, err := st.CreateSession(ctx, sessions.Session{ID: fmt.Sprintf("s%d", w)}); err != nil {
			t.Fatal(err)
		}
	}
	var stop atomic.Bool
	var failed, done atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			parent := ""
			for i := 0; !stop.Load(); i++ {
				m, err := st.AppendMessages(ctx, fmt.Sprintf("s%d", w), parent, []sessions.NewMessage{
					{Role: sessions.RoleUser, Content: fmt.Sprintf("q%d", i)},
					{Role: sessions.RoleAssistant, Content: fmt.Sprintf("a%d", i)},
				}, true)
				if err == nil {
					parent = m[1].ID
				} else {
					failed.Add(1)
					// A lost COMMIT may have committed: continue from
					// whatever the head is now.
					if s, err := st.GetSession(ctx, fmt.Sprintf("s%d", w)); err == nil {
						parent = s.HeadID
					}
				}
				if _, err := st.AppendAudit(ctx, sessions.NewAuditRecord{Type: "load", Payload: json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))}); err != nil {
					failed.Add(1)
				}
				done.Add(1)
			}
		})
	}
	for range 5 {
		time.Sleep(100 * time.Millisecond)
		db.terminate(t)
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d iterations, %d calls failed while backends were killed", done.Load(), failed.Load())

	for w := range workers {
		id := fmt.Sprintf("s%d", w)
		branch, err := st.Branch(ctx, id)
		if err != nil {
			t.Fatalf("Branch(%s) after the kills error: %v", id, err)
		}
		// Every turn is whole: the branch alternates user, assistant.
		for i, m := range branch {
			want := []string{sessions.RoleUser, sessions.RoleAssistant}[i%2]
			if m.Role != want {
				t.Fatalf("Branch(%s)[%d] role %q, want %q: a turn was half written", id, i, m.Role, want)
			}
		}
		if len(branch)%2 != 0 {
			t.Fatalf("Branch(%s) has %d messages: a turn was half written", id, len(branch))
		}
	}
	rep, err := st.VerifyAudit(ctx, nil)
	if err != nil || !rep.OK {
		t.Fatalf("VerifyAudit after the kills = %+v, %v; want an intact chain", rep, err)
	}
}

// crashHelperEnv makes the test binary act as the crash helper (see
// TestMain): it opens the store named by crashURLEnv, takes the turn lease
// and writes one huge turn until the parent kills it.
const (
	crashHelperEnv = "OPENPROGRAM_PG_CRASH_HELPER"
	crashURLEnv    = "OPENPROGRAM_PG_CRASH_URL"
	crashTurnSize  = 60000
	crashLeaseTTL  = 5 * time.Second
)

func crashHelper() int {
	ctx := context.Background()
	st, err := postgres.Open(ctx, os.Getenv(crashURLEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash helper:", err)
		return 2
	}
	if err := st.AcquireTurn(ctx, "s", "helper", crashLeaseTTL); err != nil {
		fmt.Fprintln(os.Stderr, "crash helper:", err)
		return 2
	}
	sess, err := st.GetSession(ctx, "s")
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash helper:", err)
		return 2
	}
	msgs := make([]sessions.NewMessage, crashTurnSize)
	for i := range msgs {
		msgs[i] = sessions.NewMessage{Role: sessions.RoleTool, Content: strings.Repeat("x", 100) + fmt.Sprint(i)}
	}
	fmt.Println("writing")
	if _, err := st.AppendMessages(ctx, "s", sess.HeadID, msgs, true); err != nil {
		fmt.Fprintln(os.Stderr, "crash helper:", err)
		return 2
	}
	fmt.Println("committed")
	return 0
}

// A process SIGKILLed in the middle of a turn write leaves the old head and
// no trace of the turn; its lease expires and is taken over.
func TestCrashMidTurn(t *testing.T) {
	db := newTestDB(t)
	st := openStore(t, db)
	ctx := t.Context()
	if _, err := st.CreateSession(ctx, sessions.Session{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	old, err := st.AppendMessages(ctx, "s", "", []sessions.NewMessage{
		{Role: sessions.RoleUser, Content: "q"}, {Role: sessions.RoleAssistant, Content: "a"},
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()

	helperApp := db.AppName + "_helper"
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashHelperEnv+"=1",
		crashURLEnv+"="+pgtest.WithParams(db.URL, map[string]string{"application_name": helperApp}))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "writing" {
		t.Fatalf("crash helper did not start writing: %q %v", lines.Text(), lines.Err())
	}
	// Kill it once its transaction has written rows (it holds an xid) and
	// before it commits.
	admin := db.conn(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var writing bool
		if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE application_name = $1 AND backend_xid IS NOT NULL)`, helperApp).Scan(&writing); err != nil {
			t.Fatal(err)
		}
		if writing {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the crash helper's turn transaction never started writing")
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed = true
	_ = cmd.Wait()
	rest, _ := readAll(lines)
	if strings.Contains(rest, "committed") {
		t.Fatalf("the crash helper committed before it was killed; the test did not hit the middle of the write")
	}

	st = openStore(t, db)
	sess, err := st.GetSession(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if sess.HeadID != old[1].ID {
		t.Errorf("HeadID after the crash = %q, want the old head %q", sess.HeadID, old[1].ID)
	}
	branch, err := st.Branch(ctx, "s")
	if err != nil || len(branch) != 2 {
		t.Errorf("Branch after the crash = %d msgs, %v; want the 2 old ones", len(branch), err)
	}
	// No orphan of the killed turn either. The killed backend may still be
	// rolling back; the row count waits for it.
	var n int
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM messages WHERE session_id = 's'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("%d messages stored after the crash, want the 2 old ones", n)
	}
	// The dead process's lease outlives it: its row is still there, and
	// blocks until it expires (the server's clock decides), then is taken
	// over. On a slow machine the lease may have expired already by now:
	// then only the row and the takeover are checked, never a live lease
	// that the clock says is gone.
	var holder string
	var leftUS int64
	if err := admin.QueryRow(ctx, `SELECT owner, greatest(extract(epoch FROM expires_at - now()) * 1e6, 0)::bigint
		FROM turn_leases WHERE session_id = 's'`).Scan(&holder, &leftUS); err != nil {
		t.Fatalf("read the dead holder's lease: %v", err)
	}
	checked := time.Now()
	left := time.Duration(leftUS) * time.Microsecond
	if holder != "helper" {
		t.Fatalf("lease owner after the crash = %q, want the dead holder %q", holder, "helper")
	}
	if left > crashLeaseTTL/5 {
		err := st.AcquireTurn(ctx, "s", "heir", time.Minute)
		switch {
		case errors.Is(err, sessions.ErrBusy):
		case err == nil && time.Since(checked) >= left:
			// A loaded machine took longer than the lease had left: the
			// takeover below is what is left to check.
			t.Logf("AcquireTurn came %v after the check, past the %v the lease had left", time.Since(checked), left)
		default:
			t.Errorf("AcquireTurn %v before the dead holder's lease expires error = %v, want ErrBusy", left, err)
		}
	} else {
		t.Logf("the dead holder's lease had %v left when checked (slow machine): its expiry is not checked", left)
	}
	for deadline := time.Now().Add(crashLeaseTTL + 2*time.Minute); ; time.Sleep(50 * time.Millisecond) {
		err := st.AcquireTurn(ctx, "s", "heir", time.Minute)
		if err == nil {
			break
		}
		if !errors.Is(err, sessions.ErrBusy) || time.Now().After(deadline) {
			t.Fatalf("AcquireTurn after the dead holder's lease expired error = %v, want nil", err)
		}
	}
	if _, err := st.AppendMessages(ctx, "s", old[1].ID, []sessions.NewMessage{{Role: sessions.RoleUser, Content: "next"}}, true); err != nil {
		t.Errorf("AppendMessages after the crash error: %v", err)
	}
}

func readAll(s *bufio.Scanner) (string, error) {
	var b strings.Builder
	for s.Scan() {
		b.WriteString(s.Text())
		b.WriteByte('\n')
	}
	return b.String(), s.Err()
}
