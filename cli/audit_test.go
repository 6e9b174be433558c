package cli_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/cli"
	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/tokenauth"
)

// auditInstall makes a state directory whose store holds the key record
// and n more, keyed with the state directory's audit key.
func auditInstall(t *testing.T, n int) (cli.Env, string) {
	t.Helper()
	env, state := fresh(t)
	mustCLI(t, env, "mcp", "token", "create")
	appendRecords(t, state, n)
	return env, state
}

func appendRecords(t *testing.T, state string, n int) {
	t.Helper()
	key, _, err := tokenauth.LoadOrCreateKey(tokenauth.KeyPath(state))
	if err != nil {
		t.Fatal(err)
	}
	st, err := sessions.OpenWith(context.Background(), "sqlite:"+filepath.Join(state, cli.DatabaseFileName), &sessions.Options{AuditKey: key})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := range n {
		if _, err := st.AppendAudit(context.Background(), sessions.NewAuditRecord{Type: "mcp.server.start", Origin: "mcp/test",
			Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}); err != nil {
			t.Fatal(err)
		}
	}
}

var headLine = regexp.MustCompile(`^([0-9]+) ([0-9a-f]{64})\n$`)

func TestAuditHeadAndVerifyHead(t *testing.T) {
	env, state := auditInstall(t, 3)
	out := mustCLI(t, env, "audit", "head")
	m := headLine.FindStringSubmatch(out)
	if m == nil || m[1] != "4" {
		t.Fatalf("audit head = %q, want \"4 <64 hex>\\n\"", out)
	}
	anchor := m[1] + ":" + m[2]
	appendRecords(t, state, 2)
	if got := mustCLI(t, env, "audit", "verify", "--head", anchor); got != "audit log intact: 6 records, extends head 4\n" {
		t.Errorf("audit verify --head %s = %q, want it intact and extending head 4", anchor, got)
	}
	if got := mustCLI(t, env, "audit", "verify"); got != "audit log intact: 6 records\n" {
		t.Errorf("audit verify = %q, want 6 intact records", got)
	}
	for _, tc := range []struct{ head, want string }{
		{"4:" + strings.Repeat("0", 64), "audit log broken at record 4: audit record 4 is not the anchored head"},
		{"9:" + m[2], "audit log broken at record 7: the log ends at record 6 and no longer extends the anchored head 9:"},
	} {
		r := runCLI(t, env, "audit", "verify", "--head", tc.head)
		t.Logf("audit verify --head %s: exit %d: %s", tc.head, r.code, strings.TrimSpace(r.stderr))
		if r.code != cli.ExitFailure || r.stdout != "" || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("audit verify --head %s = exit %d, stdout %q, stderr %q; want exit 1 saying %q", tc.head, r.code, r.stdout, r.stderr, tc.want)
		}
	}
	for _, bad := range []string{"4", "0:" + m[2], "x:" + m[2], "4:" + strings.ToUpper(m[2]), "4:abc", "+4:" + m[2]} {
		if r := runCLI(t, env, "audit", "verify", "--head", bad); r.code != cli.ExitUsage || !strings.Contains(r.stderr, "--head") {
			t.Errorf("audit verify --head %q = exit %d, stderr %q; want a usage error about --head", bad, r.code, r.stderr)
		}
	}
}

// A database writer deletes the newest records and moves the head back:
// verify reports it, head refuses to print an anchor for it.
func TestAuditVerifyCatchesTruncation(t *testing.T) {
	env, state := auditInstall(t, 4)
	db, err := sql.Open("sqlite", filepath.Join(state, cli.DatabaseFileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`DROP TRIGGER audit_log_no_delete`,
		`DELETE FROM audit_log WHERE id > 3`,
		`UPDATE audit_head SET last_id = 3, last_hash = (SELECT hash FROM audit_log WHERE id = 3)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, cmd := range []string{"verify", "head"} {
		r := runCLI(t, env, "audit", cmd)
		t.Logf("audit %s after truncation: exit %d: %s", cmd, r.code, strings.TrimSpace(r.stderr))
		if r.code != cli.ExitFailure || r.stdout != "" || !strings.Contains(r.stderr, "audit log broken at record 4: the chain head (record 3) does not carry its seal") {
			t.Errorf("audit %s after truncation = exit %d, stdout %q, stderr %q; want exit 1 naming record 4", cmd, r.code, r.stdout, r.stderr)
		}
	}
}

func TestAuditVerifyWithoutKey(t *testing.T) {
	env, state := fresh(t)
	mustCLI(t, env, "mcp", "token", "create")
	r := runCLI(t, env, "audit", "verify")
	if r.code != cli.ExitFailure || !strings.Contains(r.stderr, "no audit key at "+tokenauth.KeyPath(state)) {
		t.Errorf("audit verify without a key = exit %d, stderr %q; want exit 1 naming the missing key", r.code, r.stderr)
	}
	if _, err := tokenauth.ReadKey(tokenauth.KeyPath(state)); err == nil {
		t.Errorf("audit verify created the audit key; read-only commands must not")
	}
}
