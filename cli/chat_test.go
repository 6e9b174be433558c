package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/openprogram/cli"
)

// chatIn runs `openprogram chat args...` in-process with stdin, which is
// not a terminal: plain input and output.
func chatIn(t *testing.T, env cli.Env, stdin string, args ...string) ran {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	app := &cli.App{Stdin: strings.NewReader(stdin), Stdout: &stdout, Stderr: &stderr, Env: env, Version: testVersion, Executable: testExe}
	code := cli.Main(ctx, app, append([]string{"chat"}, args...))
	return ran{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// scriptedModel configures the scripted model with turns (JSON) and a
// working directory.
func scriptedModel(t *testing.T, env cli.Env, turns string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(path, []byte(`{"turns":`+turns+`}`), 0o600); err != nil {
		t.Fatal(err)
	}
	work, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dirs, _ := json.Marshal([]string{work})
	mustCLI(t, env, "config", "set", "model.provider", "scripted")
	mustCLI(t, env, "config", "set", "model.script", path)
	mustCLI(t, env, "config", "set", "agent.work_dirs", string(dirs))
}

func TestChatSlashCommands(t *testing.T) {
	env, _ := fresh(t)
	scriptedModel(t, env, `[{"text":"hi back"},{"text":"second"}]`)
	r := chatIn(t, env, "hello\n/sessions\n/new\n/switch cli_missing\n/switch\n/bogus\n/help\n/exit\nnot sent\n")
	if r.code != 0 {
		t.Fatalf("chat = exit %d, stderr %s", r.code, r.stderr)
	}
	sid := regexp.MustCompile(`New session (cli_[0-9a-f]{32})`).FindStringSubmatch(r.stdout)
	if sid == nil {
		t.Fatalf("chat output names no new session:\n%s", r.stdout)
	}
	for _, want := range []string{
		"hi back",
		"* " + sid[1],
		"Your next message starts a new session.",
		`session "cli_missing" not found`,
		"Usage: /switch ID",
		"Unknown command /bogus",
		"/switch ID    continue session ID",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("chat output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "\x1b") || strings.Contains(r.stdout, "second") {
		t.Errorf("chat output holds escape codes or a turn after /exit:\n%q", r.stdout)
	}

	// /switch continues a session; the end of input leaves.
	r = chatIn(t, env, "/switch "+sid[1]+"\nagain\n")
	if r.code != 0 || !strings.Contains(r.stdout, "Now in session "+sid[1]) || !strings.Contains(r.stdout, "hi back") {
		t.Fatalf("chat = exit %d, stdout:\n%s", r.code, r.stdout)
	}
	if n := strings.Count(mustCLI(t, env, "sessions", "show", "--json", sid[1]), "\n"); n != 4 {
		t.Errorf("session %s has %d messages, want 4 (two turns)", sid[1], n)
	}
	if list := mustCLI(t, env, "sessions", "list"); strings.Count(list, "cli_") != 1 {
		t.Errorf("sessions list = %s, want the one session (no empty session for /new)", list)
	}
}

func TestChatUnknownSession(t *testing.T) {
	env, _ := fresh(t)
	scriptedModel(t, env, `[]`)
	if r := chatIn(t, env, "", "--session", "cli_nope"); r.code != 1 || !strings.Contains(r.stderr, `session "cli_nope" not found`) {
		t.Errorf("chat --session cli_nope = exit %d, stderr %q; want 1 and not found", r.code, r.stderr)
	}
}
