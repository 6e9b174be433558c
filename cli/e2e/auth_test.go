//go:build unix

package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/openprogram/cli/e2e/internal/e2etest"
)

// initializeLine is what a client would send first. In the failure cases it
// must still be in the pipe after the server exited: nothing was read.
const initializeLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}` + "\n"

// authFailedLine is the one fixed first line of every authentication failure.
const authFailedLine = "Error: MCP server authentication failed"

// rawServe is how a `mcp serve` run over raw pipes ended.
type rawServe struct {
	code int
	// exitedOnItsOwn: the process exited while its stdin was still open
	// (the test had not closed the writer).
	exitedOnItsOwn bool
	stdout, stderr string
	// unread is what was left in the stdin pipe after the process exited.
	unread []byte
}

// serveRaw starts `openprogram mcp serve` with extraEnv and a stdin pipe
// that already holds initializeLine and whose writer the test keeps open.
// It waits until the process exits or writes a line to stdout; only then
// does it close stdin, wait for the exit, and read what is left in the pipe.
func serveRaw(t *testing.T, in *e2etest.Install, extraEnv ...string) rawServe {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatalf("stdin pipe: %v", err)
	}
	defer inR.Close()
	defer inW.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatalf("stdout pipe: %v", err)
	}
	defer outR.Close()
	if _, err := inW.WriteString(initializeLine); err != nil {
		t.Fatalf("write stdin: %v", err)
	}

	cmd := exec.Command(e2etest.BinPath, "mcp", "serve")
	cmd.Env = in.Env(extraEnv...)
	var stderr e2etest.LockedBuffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, &stderr
	err = cmd.Start()
	outW.Close()
	if err != nil {
		t.Fatalf("start openprogram mcp serve: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	stdout := e2etest.NewLineLog()
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = copyLines(stdout, outR)
	}()

	var r rawServe
	deadline := time.After(e2etest.ExitTimeout)
wait:
	for {
		lines, _, eof, changed := stdout.Snapshot()
		if len(lines) > 0 {
			break // it answered: it read stdin
		}
		if eof {
			changed = nil // stdout closed: the process is exiting
		}
		select {
		case <-exited:
			r.exitedOnItsOwn = true
			break wait
		case <-changed:
		case <-deadline:
			t.Errorf("openprogram mcp serve neither exited nor answered within %s", e2etest.ExitTimeout)
			break wait
		}
	}
	if !r.exitedOnItsOwn {
		inW.Close()
		select {
		case <-exited:
		case <-time.After(e2etest.ExitTimeout):
			t.Errorf("openprogram mcp serve did not exit after stdin closed; killing it")
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	<-copied
	r.code = cmd.ProcessState.ExitCode()
	lines, partial, _, _ := stdout.Snapshot()
	r.stdout = string(bytes.Join(lines, []byte("\n"))) + string(partial)
	if len(lines) > 0 {
		r.stdout += "\n"
	}
	r.stderr = stderr.String()

	if err := inR.SetReadDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
		t.Fatalf("set a read deadline on the stdin pipe: %v", err)
	}
	// Whatever the server did not read is still in the pipe; a drained pipe
	// times out (writer open) or ends (writer closed).
	buf := make([]byte, 2*len(initializeLine))
	n, err := inR.Read(buf)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, io.EOF) {
		t.Fatalf("read what is left in the stdin pipe: %v", err)
	}
	r.unread = buf[:n]
	return r
}

// copyLines copies r into a lineLog.
func copyLines(dst *e2etest.LineLog, r *os.File) (int64, error) {
	var total int64
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			dst.Add(buf[:n])
			total += int64(n)
		}
		if err != nil {
			dst.End()
			return total, err
		}
	}
}

// randomToken returns a token-shaped string that is not the install's token.
func randomToken(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// leaksPart reports whether s contains any 8-byte piece of secret.
func leaksPart(s, secret string) bool {
	const piece = 8
	for i := 0; i+piece <= len(secret); i++ {
		if strings.Contains(s, secret[i:i+piece]) {
			return true
		}
	}
	return false
}

// TestServeAuthenticationFailures: every authentication failure ends the
// process before the protocol starts: exit 1, empty stdout, the fixed first
// stderr line (a cause may follow, never any part of the token), the
// client's first bytes still unread in the stdin pipe whose writer stayed
// open, no token created and no server audit record.
func TestServeAuthenticationFailures(t *testing.T) {
	t.Parallel()
	type setup func(t *testing.T, in *e2etest.Install) (env []string, secrets []string)
	withToken := func(value string) []string { return []string{e2etest.EnvToken + "=" + value} }
	cases := []struct {
		name    string
		noToken bool // skip `mcp token create`
		setup   setup
	}{
		{"token file missing", true, func(t *testing.T, in *e2etest.Install) ([]string, []string) {
			other := randomToken(t)
			return withToken(other), []string{other}
		}},
		{"token file mode 0644", false, func(t *testing.T, in *e2etest.Install) ([]string, []string) {
			chmod(t, filepath.Join(in.Home, "mcp_server_token"), 0o644)
			return withToken(in.Token), []string{in.Token}
		}},
		{"token file mode 0400", false, func(t *testing.T, in *e2etest.Install) ([]string, []string) {
			chmod(t, filepath.Join(in.Home, "mcp_server_token"), 0o400)
			return withToken(in.Token), []string{in.Token}
		}},
		{"token file is a symlink", false, func(t *testing.T, in *e2etest.Install) ([]string, []string) {
			path := filepath.Join(in.Home, "mcp_server_token")
			real := filepath.Join(in.Home, "real_token")
			if err := os.Rename(path, real); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(real, path); err != nil {
				t.Fatal(err)
			}
			return withToken(in.Token), []string{in.Token}
		}},
		{"token file has a trailing newline", false, func(t *testing.T, in *e2etest.Install) ([]string, []string) {
			writeKeepMode(t, filepath.Join(in.Home, "mcp_server_token"), in.Token+"\n")
			return withToken(in.Token), []string{in.Token}
		}},
		{"token file empty", false, func(t *testing.T, in *e2etest.Install) ([]string, []string) {
			writeKeepMode(t, filepath.Join(in.Home, "mcp_server_token"), "")
			return withToken(in.Token), []string{in.Token}
		}},
		{"state directory open to the group", false, func(t *testing.T, in *e2etest.Install) ([]string, []string) {
			chmod(t, in.Home, 0o750)
			return withToken(in.Token), []string{in.Token}
		}},
		{"env var missing", false, func(t *testing.T, in *e2etest.Install) ([]string, []string) {
			return nil, []string{in.Token}
		}},
		{"env var empty", false, func(t *testing.T, in *e2etest.Install) ([]string, []string) {
			return withToken(""), []string{in.Token}
		}},
		{"env var mismatched", false, func(t *testing.T, in *e2etest.Install) ([]string, []string) {
			other := randomToken(t)
			return withToken(other), []string{in.Token, other}
		}},
		{"env var is the token minus its last character", false, func(t *testing.T, in *e2etest.Install) ([]string, []string) {
			return withToken(in.Token[:len(in.Token)-1]), []string{in.Token}
		}},
		{"env var has a trailing newline", false, func(t *testing.T, in *e2etest.Install) ([]string, []string) {
			return withToken(in.Token + "\n"), []string{in.Token}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := e2etest.NewBareInstall(t, e2etest.SQLite)
			if !tc.noToken {
				in.CreateToken()
			}
			env, secrets := tc.setup(t, in)
			r := serveRaw(t, in, env...)

			if r.code != 1 {
				t.Errorf("exit status = %d, want 1\nstderr:\n%s", r.code, r.stderr)
			}
			if !r.exitedOnItsOwn {
				t.Errorf("the server waited for its stdin instead of exiting at once")
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want empty", r.stdout)
			}
			lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			if lines[0] != authFailedLine {
				t.Errorf("stderr first line = %q, want %q", lines[0], authFailedLine)
			}
			if len(lines) > 2 {
				t.Errorf("stderr has %d lines, want the fixed line and at most one cause line:\n%s", len(lines), r.stderr)
			}
			for _, s := range secrets {
				if len(s) >= 8 && leaksPart(r.stderr, s) {
					t.Errorf("stderr contains part of a token:\n%s", r.stderr)
				}
			}
			if string(r.unread) != initializeLine {
				t.Errorf("stdin pipe holds %q after the exit, want the untouched %q: the server read stdin", r.unread, initializeLine)
			}
			if tc.noToken {
				if _, err := os.Lstat(filepath.Join(in.Home, "mcp_server_token")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("mcp serve created a token file (lstat: %v)", err)
				}
			}
			if err := os.Chmod(in.Home, 0o700); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			// No state directory at all is the strongest "nothing written";
			// otherwise the audit log must be empty.
			if _, err := os.Lstat(in.Home); err == nil {
				if recs := in.Audit(); len(recs) != 0 {
					t.Errorf("audit after a failed authentication = %+v, want no records", recs)
				}
			}
		})
	}

	// The control: the same harness with the right token reads stdin (the
	// pipe is drained) and answers initialize on stdout.
	t.Run("control: valid token", func(t *testing.T) {
		t.Parallel()
		in := e2etest.NewInstall(t, e2etest.SQLite)
		r := serveRaw(t, in, e2etest.EnvToken+"="+in.Token)
		if r.code != 0 {
			t.Errorf("exit status = %d, want 0\nstderr:\n%s", r.code, r.stderr)
		}
		if r.exitedOnItsOwn {
			t.Errorf("the server exited with its stdin open")
		}
		if len(r.unread) != 0 {
			t.Errorf("stdin pipe still holds %q, want it read", r.unread)
		}
		if !strings.Contains(r.stdout, `"protocolVersion":"2025-11-25"`) || strings.Count(r.stdout, "\n") != 1 {
			t.Errorf("stdout = %q, want one initialize response at 2025-11-25", r.stdout)
		}
		if strings.Contains(r.stderr, authFailedLine) || leaksPart(r.stderr, in.Token) {
			t.Errorf("stderr = %q, want no failure and no token", r.stderr)
		}
	})
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// writeKeepMode rewrites a file's content in place (same inode and mode).
func writeKeepMode(t *testing.T, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
