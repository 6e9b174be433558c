package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/sessions"
)

// checkIntegrity runs SQLite's own consistency checks on the file.
func checkIntegrity(t *testing.T, s *Store) {
	t.Helper()
	var res string
	if err := s.r.QueryRow(`PRAGMA integrity_check`).Scan(&res); err != nil || res != "ok" {
		t.Fatalf("PRAGMA integrity_check = %q, %v; want ok", res, err)
	}
	rows, err := s.r.Query(`PRAGMA foreign_key_check`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if rows.Next() {
		t.Fatalf("PRAGMA foreign_key_check reports violations")
	}
}

func countMessages(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.r.QueryRow(`SELECT count(*) FROM messages`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestKilledMidTurn SIGKILLs a process in the middle of a turn write and
// checks the store reopens consistent: the head is the old one or the tip of
// a complete chain, never a missing or partial chain.
func TestKilledMidTurn(t *testing.T) {
	const chain = 3000
	path := filepath.Join(t.TempDir(), DefaultFileName)
	setup := openAt(t, path)
	ctx := t.Context()
	mustCreateSession(t, setup, "s")
	first, err := setup.AppendMessages(ctx, "s", "", []sessions.NewMessage{{Role: sessions.RoleUser, Content: "q"}, {Role: sessions.RoleAssistant, Content: "a"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := setup.Close(); err != nil {
		t.Fatal(err)
	}

	t.Run("inside the transaction", func(t *testing.T) {
		cmd, lines := helper(t, "turn-hold", path, chain)
		expectLine(t, lines, "in-tx") // all messages inserted, head not yet moved, not committed
		kill(t, cmd)
		_ = cmd.Wait()
		st := openAt(t, path)
		checkIntegrity(t, st)
		sess, err := st.GetSession(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		if sess.HeadID != first[1].ID {
			t.Errorf("HeadID after a kill inside the turn = %q, want the old head %q", sess.HeadID, first[1].ID)
		}
		if n := countMessages(t, st); n != 2 {
			t.Errorf("%d messages after a kill inside the turn, want the 2 committed before", n)
		}
	})

	for i := range 4 {
		t.Run(fmt.Sprintf("at a random point %d", i), func(t *testing.T) {
			before := openAt(t, path)
			old, err := before.GetSession(ctx, "s")
			if err != nil {
				t.Fatal(err)
			}
			oldLen := len(mustBranch(t, before, "s"))
			cmd, lines := helper(t, "turn", path, chain)
			expectLine(t, lines, "started")
			time.Sleep(time.Duration(rand.IntN(400)) * time.Millisecond)
			kill(t, cmd)
			_ = cmd.Wait()

			st := openAt(t, path)
			checkIntegrity(t, st)
			sess, err := st.GetSession(ctx, "s")
			if err != nil {
				t.Fatal(err)
			}
			branch := mustBranch(t, st, "s")
			if branch[len(branch)-1].ID != sess.HeadID {
				t.Fatalf("Branch ends at %q, want the head %q", branch[len(branch)-1].ID, sess.HeadID)
			}
			grown := len(branch) - oldLen
			if grown < 0 || grown%chain != 0 {
				t.Fatalf("branch grew from %d to %d messages: not a whole number of %d-message turns", oldLen, len(branch), chain)
			}
			if grown == 0 && sess.HeadID != old.HeadID {
				t.Errorf("branch did not grow but the head moved from %q to %q", old.HeadID, sess.HeadID)
			}
			// Every committed chain is complete: messages 1..chain in order.
			for j := oldLen; j < len(branch); j++ {
				want := fmt.Sprintf("chain %d/%d of ", (j-oldLen)%chain+1, chain)
				if !strings.HasPrefix(branch[j].Content, want) {
					t.Fatalf("branch[%d].Content = %q, want prefix %q", j, branch[j].Content, want)
				}
			}
			t.Logf("killed after %d committed turns", grown/chain)
		})
	}
}

func mustCreateSession(t *testing.T, s *Store, id string) {
	t.Helper()
	if _, err := s.CreateSession(t.Context(), sessions.Session{ID: id}); err != nil {
		t.Fatal(err)
	}
}

func mustBranch(t *testing.T, s *Store, id string) []sessions.Message {
	t.Helper()
	b, err := s.Branch(t.Context(), id)
	if err != nil {
		t.Fatalf("Branch(%q) error: %v", id, err)
	}
	for i, m := range b {
		if (i == 0) != (m.ParentID == "") || (i > 0 && m.ParentID != b[i-1].ID) {
			t.Fatalf("Branch(%q)[%d] has parent %q: broken chain", id, i, m.ParentID)
		}
	}
	return b
}

// rawSQLite creates an SQLite file as another application would.
func rawSQLite(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func TestOpenRefusesForeignFiles(t *testing.T) {
	cases := []struct {
		name    string
		make    func(t *testing.T, path string)
		wantErr error
		wantMsg string
	}{
		{"text file", func(t *testing.T, path string) {
			writeFile(t, path, []byte("these are my notes, not a database\n"))
		}, sessions.ErrNotDatabase, "not an SQLite database"},
		{"short binary", func(t *testing.T, path string) {
			writeFile(t, path, []byte{0, 1, 2, 3, 4, 5})
		}, sessions.ErrNotDatabase, "not an SQLite database"},
		{"sqlite header then garbage", func(t *testing.T, path string) {
			b := bytes.Repeat([]byte{0xa5}, 8192)
			copy(b, sqliteMagic)
			writeFile(t, path, b)
		}, sessions.ErrNotDatabase, "not an SQLite database"},
		{"another application's tables", func(t *testing.T, path string) {
			rawSQLite(t, path, `CREATE TABLE contacts (name TEXT)`, `INSERT INTO contacts VALUES ('x')`)
		}, sessions.ErrNotDatabase, "another application's tables"},
		{"another application's WAL database", func(t *testing.T, path string) {
			rawSQLite(t, path, `PRAGMA journal_mode = WAL`, `CREATE TABLE sessions (id TEXT)`, `INSERT INTO sessions VALUES ('x')`)
		}, sessions.ErrNotDatabase, "another application's tables"},
		{"another application id", func(t *testing.T, path string) {
			rawSQLite(t, path, `PRAGMA application_id = 1234`, `PRAGMA user_version = 1`)
		}, sessions.ErrNotDatabase, "application_id 0x4d2"},
		{"corrupt OpenProgram database", func(t *testing.T, path string) {
			st, err := Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for i := 100; i < 4096; i++ { // page 1: the schema table
				b[i] = 0xa5
			}
			writeFile(t, path, b)
		}, sessions.ErrNotDatabase, "corrupt"},
		{"newer schema", func(t *testing.T, path string) {
			st, err := Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.w.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 0)`); err != nil {
				t.Fatal(err)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
		}, sessions.ErrSchemaTooNew, "upgrade openprogram"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, DefaultFileName)
			tc.make(t, path)
			before := readDir(t, dir)
			for _, open := range []func() error{
				func() error { _, err := Open(context.Background(), path); return err },
				func() error { _, err := sessions.Open(context.Background(), "sqlite:"+path); return err },
			} {
				err := open()
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Open error = %v, want %v", err, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantMsg) || !strings.Contains(err.Error(), path) {
					t.Errorf("Open error = %q, want it to name the file and say %q", err, tc.wantMsg)
				}
			}
			if diff := cmp.Diff(before, readDir(t, dir)); diff != "" {
				t.Errorf("Open changed the directory (-before +after):\n%s", diff)
			}
		})
	}
}

const sqliteMagic = "SQLite format 3\x00"

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// readDir returns every file in dir with its content.
func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

func TestOpenURLForms(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	ctx := t.Context()
	for _, tc := range []struct{ url, file string }{
		{"sqlite:" + filepath.Join(dir, "a.db"), "a.db"},
		{"sqlite://" + filepath.Join(dir, "b.db"), "b.db"},
		{"sqlite:c.db", "c.db"},
		{"sqlite://d.db", "d.db"},
		{"SQLite:" + filepath.Join(dir, oddFileName), oddFileName},
	} {
		st, err := sessions.Open(ctx, tc.url)
		if err != nil {
			t.Fatalf("Open(%q) error: %v", tc.url, err)
		}
		if _, err := st.CreateSession(ctx, sessions.Session{ID: "x"}); err != nil {
			t.Fatalf("Open(%q): CreateSession error: %v", tc.url, err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, tc.file)); err != nil {
			t.Fatalf("Open(%q) did not create %s: %v", tc.url, tc.file, err)
		}
		wantOwnerOnly(t, filepath.Join(dir, tc.file))
	}
	for _, bad := range []string{"sqlite:", "sqlite::memory:", "sqlite:file:x.db?mode=memory", "sqlite:" + filepath.Join(dir, "missing-dir", "x.db")} {
		if st, err := sessions.Open(ctx, bad); err == nil {
			st.Close()
			t.Errorf("Open(%q) succeeded, want an error", bad)
		}
	}
	if _, err := sessions.Open(ctx, "mysql://x"); err == nil || !strings.Contains(err.Error(), "mysql") {
		t.Errorf("Open(mysql://x) error = %v, want one naming the scheme", err)
	}
}

// TestOpenTogetherMigratesOnce starts several processes and handles on one
// new file at once: all open it, and each migration is applied once. The
// file is either missing (created atomically) or an empty file someone
// created (initialised in place).
func TestOpenTogetherMigratesOnce(t *testing.T) {
	for _, preCreate := range []bool{false, true} {
		t.Run(fmt.Sprintf("empty file exists=%v", preCreate), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, DefaultFileName)
			if preCreate {
				writeFile(t, path, nil)
			}
			const n = 3
			cmds := make([]interface{ Wait() error }, 0, n)
			for range n {
				cmd, _ := helper(t, "open", path, 0)
				cmds = append(cmds, cmd)
			}
			errs := make(chan error, n)
			for range n {
				go func() {
					st, err := Open(context.Background(), path)
					if err == nil {
						err = st.Close()
					}
					errs <- err
				}()
			}
			for range n {
				if err := <-errs; err != nil {
					t.Errorf("concurrent Open error: %v", err)
				}
			}
			for i, c := range cmds {
				if err := c.Wait(); err != nil {
					t.Errorf("helper process %d: %v", i, err)
				}
			}
			st := openAt(t, path)
			var count, maxV int
			if err := st.r.QueryRow(`SELECT count(*), max(version) FROM schema_migrations`).Scan(&count, &maxV); err != nil {
				t.Fatal(err)
			}
			if count != LatestSchemaVersion() || maxV != LatestSchemaVersion() {
				t.Errorf("schema_migrations has %d rows up to %d, want each of %d versions once", count, maxV, LatestSchemaVersion())
			}
			var appID int64
			if err := st.r.QueryRow(`PRAGMA application_id`).Scan(&appID); err != nil || appID != ApplicationID {
				t.Errorf("application_id = %#x, %v; want %#x", appID, err, ApplicationID)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if strings.Contains(e.Name(), ".init-") {
					t.Errorf("temporary file %s left behind", e.Name())
				}
			}
		})
	}
}
