package cli_test

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/cli"
	"github.com/openprogram/openprogram/sessions/postgres/pgtest"
	"github.com/openprogram/openprogram/tokenauth"
)

// serveHost returns the environment of a host with a token, the scripted
// model and, when url is not empty, the store at url; with key, that audit
// key file is installed before the first start (hosts sharing one
// PostgreSQL share the key).
func serveHost(t *testing.T, url string, key []byte) (cli.Env, string) {
	t.Helper()
	env, state := fresh(t)
	token := strings.TrimSpace(mustCLI(t, env, "mcp", "token", "create"))
	mustCLI(t, env, "config", "set", "model.provider", "scripted")
	if url != "" {
		mustCLI(t, env, "config", "set", "store.url", url)
	}
	if key != nil {
		if err := os.WriteFile(tokenauth.KeyPath(state), key, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return append(env, tokenauth.EnvVar+"="+token), state
}

func readAnchorFile(t *testing.T, state string) string {
	t.Helper()
	b, err := os.ReadFile(tokenauth.AnchorPath(state))
	if err != nil {
		t.Fatalf("read the audit anchor: %v", err)
	}
	return string(b)
}

// wantRefused checks that mcp serve refuses to start on a log that does
// not extend the anchor, naming the checks and the way back.
func wantRefused(t *testing.T, env cli.Env, anchor string) {
	t.Helper()
	r := runCLI(t, env, "mcp", "serve")
	t.Logf("mcp serve on a log that does not extend the anchor: exit %d: %s", r.code, strings.TrimSpace(r.stderr))
	if r.code != cli.ExitFailure || r.stdout != "" || r.stdinReads != 0 {
		t.Fatalf("mcp serve = exit %d, stdout %q, %d stdin reads; want exit 1 before reading stdin", r.code, r.stdout, r.stdinReads)
	}
	for _, want := range []string{"does not extend the anchor", "openprogram audit verify --head " + anchor, "openprogram audit reanchor --yes"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("mcp serve stderr %q does not say %q", r.stderr, want)
		}
	}
}

// TestServeRefusesAnEmptiedStore: `: > openprogram.db` gives a new,
// intact log; the anchor kept in the state directory makes the next mcp
// serve refuse it, audit verify and head stay read-only, and a deliberate
// audit reanchor --yes (itself audited) lets the server start again.
func TestServeRefusesAnEmptiedStore(t *testing.T) {
	env, state := serveHost(t, "", nil)
	mustCLI(t, env, "mcp", "serve")
	anchor := readAnchorFile(t, state)
	for _, path := range []string{tokenauth.AnchorPath(state), tokenauth.SigningKeyPath(state), tokenauth.PinsPath(state)} {
		if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("%s = %v, %v; want a regular file", path, fi, err)
		}
		checkPrivate(t, path)
	}
	if !strings.HasPrefix(anchor, "4:") {
		t.Errorf("anchor after the first start = %q, want record 4 (shared key, writer key added, start, stop)", anchor)
	}
	mustCLI(t, env, "mcp", "serve") // the log extends the anchor
	if moved := readAnchorFile(t, state); !strings.HasPrefix(moved, "6:") {
		t.Errorf("anchor after the second start = %q, want record 6, its stop record", moved)
	}
	anchor = readAnchorFile(t, state)

	db := filepath.Join(state, cli.DatabaseFileName)
	if err := os.Truncate(db, 0); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, env, anchor)
	wantRefused(t, env, anchor) // the refusal changed nothing
	for _, args := range [][]string{{"audit", "verify"}, {"audit", "head"}} {
		runCLI(t, env, args...)
	}
	if got := readAnchorFile(t, state); got != anchor {
		t.Errorf("anchor after refused starts and read-only audit commands = %q, want it unchanged %q", got, anchor)
	}
	if r := runCLI(t, env, "audit", "reanchor"); r.code != cli.ExitUsage || !strings.Contains(r.stderr, "--yes") {
		t.Errorf("audit reanchor without --yes = exit %d, stderr %q; want a usage error naming --yes", r.code, r.stderr)
	}
	if got := mustCLI(t, env, "audit", "reanchor", "--yes"); got != "audit anchor moved to record 3 (audit.reanchored)\n" {
		t.Errorf("audit reanchor --yes = %q", got)
	}
	mustCLI(t, env, "mcp", "serve")
	tail := mustCLI(t, env, "audit", "tail", "--json")
	if !strings.Contains(tail, `"type":"audit.reanchored"`) || !strings.Contains(tail, `"previous":"`+anchor+`"`) {
		t.Errorf("audit tail after reanchor = %s; want an audit.reanchored record naming the old anchor %s", tail, anchor)
	}
	if got := mustCLI(t, env, "audit", "verify"); got != "audit log intact: 5 records\n" {
		t.Errorf("audit verify after reanchor and a start = %q, want 5 intact records", got)
	}
}

// TestHostsOnOnePostgresKeepTheirOwnAnchors: hosts sharing one PostgreSQL
// database, each with keys of its own (nothing copied between them), all
// serve, each anchors its own writer chain, each verifies the whole log
// (pinning the other's key the first time), and a new schema in its place
// is refused by each of them.
func TestHostsOnOnePostgresKeepTheirOwnAnchors(t *testing.T) {
	base := pgtest.BaseURL(t)
	url := pgtest.WithParams(base, map[string]string{"search_path": pgtest.Schema(t, base, "op_cli_anchor")})
	envA, stateA := serveHost(t, url, nil)
	envB, stateB := serveHost(t, url, nil)
	mustCLI(t, envA, "mcp", "serve") // the log: 1 shared key record, 2 A's key, 3-4
	mustCLI(t, envB, "mcp", "serve") // 5 B's key, 6-7
	mustCLI(t, envA, "mcp", "serve") // 8-9
	mustCLI(t, envB, "mcp", "serve") // 10-11
	anchorA, anchorB := readAnchorFile(t, stateA), readAnchorFile(t, stateB)
	if !strings.HasPrefix(anchorA, "9:") || !strings.HasPrefix(anchorB, "11:") {
		t.Errorf("anchors = %q and %q, want each host's last stop record (9 and 11)", anchorA, anchorB)
	}
	for _, env := range []cli.Env{envA, envB} {
		r := runCLI(t, env, "audit", "verify", "--head", anchorA)
		t.Logf("audit verify: exit %d: %s%s", r.code, r.stdout, r.stderr)
		if r.code != 0 || r.stdout != "audit log intact: 11 records, extends head 9\n" || !strings.Contains(r.stderr, "pinned audit writer key") {
			t.Errorf("audit verify --head %s = exit %d, %q, %q; want 11 intact records and the other host's key pinned", anchorA, r.code, r.stdout, r.stderr)
		}
		if keys := mustCLI(t, env, "audit", "keys", "list"); strings.Count(keys, " active ") != 2 || strings.Contains(keys, "not pinned") {
			t.Errorf("audit keys list = %q, want two active keys, both pinned", keys)
		}
	}

	fresh := pgtest.WithParams(base, map[string]string{"search_path": pgtest.Schema(t, base, "op_cli_anchor")})
	for _, h := range []struct {
		env    cli.Env
		anchor string
	}{{envA, anchorA}, {envB, anchorB}} {
		wantRefused(t, append(h.env, "OPENPROGRAM_DATABASE_URL="+fresh), h.anchor)
	}
}

func TestAuditOnFailureKey(t *testing.T) {
	env, _ := fresh(t)
	if got := mustCLI(t, env, "config", "get", "audit.on_failure"); got != `"refuse"`+"\n" {
		t.Errorf("audit.on_failure default = %q, want refuse", got)
	}
	mustCLI(t, env, "config", "set", "audit.on_failure", "log")
	if got := mustCLI(t, env, "config", "get", "audit.on_failure"); got != `"log"`+"\n" {
		t.Errorf("audit.on_failure = %q after set log", got)
	}
	if r := runCLI(t, env, "config", "set", "audit.on_failure", "ignore"); r.code != cli.ExitUsage {
		t.Errorf("config set audit.on_failure ignore = exit %d, stderr %q; want a usage error", r.code, r.stderr)
	}
}

// TestServeRefusesACutLogNamingAnotherKey: a database writer deletes the
// tail behind this host's anchor and names another key in the head; the
// anchor is still checked, and mcp serve refuses.
func TestServeRefusesACutLogNamingAnotherKey(t *testing.T) {
	env, state := serveHost(t, "", nil)
	mustCLI(t, env, "mcp", "serve")
	mustCLI(t, env, "mcp", "serve")
	anchor := readAnchorFile(t, state)
	if !strings.HasPrefix(anchor, "6:") {
		t.Fatalf("anchor after two starts = %q, want record 6", anchor)
	}
	execSQLite(t, state,
		`DROP TRIGGER audit_log_no_delete`,
		`DELETE FROM audit_log WHERE id > 3`,
		`UPDATE audit_head SET last_id = 3, last_hash = (SELECT hash FROM audit_log WHERE id = 3), key_id = '0123456789abcdef'`)
	wantRefused(t, env, anchor)
}

// TestAuditVerifyComparesWithTheAnchor: a store rolled back behind this
// host's anchor (an old copy put back) is an intact chain, but audit verify
// compares it with the anchor by default and fails, naming the anchor.
func TestAuditVerifyComparesWithTheAnchor(t *testing.T) {
	env, state := serveHost(t, "", nil)
	mustCLI(t, env, "mcp", "serve")
	db := filepath.Join(state, cli.DatabaseFileName)
	old, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	mustCLI(t, env, "mcp", "serve")
	anchor := readAnchorFile(t, state)
	if err := os.WriteFile(db, old, 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, env, "audit", "verify")
	t.Logf("audit verify after a rollback behind the anchor: exit %d: %s%s", r.code, r.stdout, strings.TrimSpace(r.stderr))
	if r.code != cli.ExitFailure || r.stdout != "" || !strings.Contains(r.stderr, anchor) || !strings.Contains(r.stderr, tokenauth.AnchorPath(state)) {
		t.Errorf("audit verify after a rollback = exit %d, stdout %q, stderr %q; want exit 1 naming the anchor %s in %s",
			r.code, r.stdout, r.stderr, anchor, tokenauth.AnchorPath(state))
	}
	if got := readAnchorFile(t, state); got != anchor {
		t.Errorf("anchor after audit verify = %q, want it unchanged %q", got, anchor)
	}
}

// execSQLite runs statements on the state directory's SQLite store behind
// openprogram's back.
func execSQLite(t *testing.T, state string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(state, cli.DatabaseFileName))
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

// TestAuditKeysRevokeAndAForeignTail: on one PostgreSQL database, host A
// revokes host B's key (audited), and B can no longer append; a database
// writer deleting host B's newest record is named by host A's verify.
func TestAuditKeysRevokeAndAForeignTail(t *testing.T) {
	base := pgtest.BaseURL(t)
	url := pgtest.WithParams(base, map[string]string{"search_path": pgtest.Schema(t, base, "op_cli_keys")})
	envA, _ := serveHost(t, url, nil)
	envB, stateB := serveHost(t, url, nil)
	mustCLI(t, envA, "mcp", "serve")
	mustCLI(t, envB, "mcp", "serve")
	mustCLI(t, envA, "audit", "verify")
	keyB := mustCLI(t, envB, "audit", "keys", "list")
	var idB string
	for _, line := range strings.Split(keyB, "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[2] == "pinned" {
			idB = f[0] // B pinned only its own key so far
		}
	}
	if idB == "" {
		t.Fatalf("audit keys list on B = %q, want B's own key pinned", keyB)
	}

	if r := runCLI(t, envA, "audit", "keys", "revoke", idB); r.code != cli.ExitUsage || !strings.Contains(r.stderr, "--yes") {
		t.Errorf("audit keys revoke without --yes = exit %d, %q", r.code, r.stderr)
	}
	if got := mustCLI(t, envA, "audit", "keys", "revoke", idB, "--yes"); !strings.Contains(got, "audit writer key "+idB+" revoked") {
		t.Errorf("audit keys revoke = %q", got)
	}
	if list := mustCLI(t, envA, "audit", "keys", "list"); !strings.Contains(list, idB+"  revoked") {
		t.Errorf("audit keys list after the revocation = %q, want %s revoked", list, idB)
	}
	if tail := mustCLI(t, envA, "audit", "tail", "--json"); !strings.Contains(tail, `"type":"audit.key.revoked"`) {
		t.Errorf("audit tail after the revocation = %s, want an audit.key.revoked record", tail)
	}
	tokenB, err := os.ReadFile(filepath.Join(stateB, "mcp_server_token"))
	if err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, envB, "mcp", "token", "rotate", "--yes")
	t.Logf("mcp token rotate on B after its key was revoked: exit %d: %s", r.code, strings.TrimSpace(r.stderr))
	if r.code == 0 || !strings.Contains(r.stderr, "revoked") {
		t.Errorf("mcp token rotate on the revoked host = exit %d, stderr %q; want a refusal saying the key was revoked", r.code, r.stderr)
	}
	// No side effect without its record: the refused record leaves the
	// token as it was, and prints none.
	if after, _ := os.ReadFile(filepath.Join(stateB, "mcp_server_token")); string(after) != string(tokenB) || r.stdout != "" {
		t.Errorf("mcp token rotate whose audit record was refused changed the token (stdout %q)", r.stdout)
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, q := range []string{
		`ALTER TABLE audit_records DISABLE TRIGGER USER`,
		`DELETE FROM audit_records WHERE id = (SELECT max(r.id) FROM audit_records r JOIN audit_writers w USING (writer_id) WHERE w.key_id = '` + idB + `')`,
	} {
		if _, err := conn.Exec(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	r = runCLI(t, envA, "audit", "verify")
	t.Logf("audit verify on A after B's tail was deleted: exit %d: %s", r.code, strings.TrimSpace(r.stderr))
	if r.code != cli.ExitFailure || !strings.Contains(r.stderr, "missing (its signed head") || !strings.Contains(r.stderr, idB) {
		t.Errorf("audit verify on A = exit %d, stderr %q; want exit 1 naming B's key %s and its missing records", r.code, r.stderr, idB)
	}

}
