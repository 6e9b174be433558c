package cli_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/openprogram/openprogram/cli"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testVersion is the build version the tests hand to cli.App.
const testVersion = "v9.9.9-test"

// ran is how one cli.Main call ended.
type ran struct {
	stdout, stderr string
	code           int
	stdinReads     int32
}

// countingReader is a stdin that counts how often it was read.
type countingReader struct{ reads atomic.Int32 }

func (r *countingReader) Read([]byte) (int, error) {
	r.reads.Add(1)
	return 0, io.EOF
}

// runCLI calls cli.Main with args, env, buffers for stdout and stderr and a
// stdin that counts reads.
func runCLI(t *testing.T, env cli.Env, args ...string) ran {
	t.Helper()
	return runCLIExe(t, env, testExe, args...)
}

func runCLIExe(t *testing.T, env cli.Env, exe string, args ...string) ran {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	stdin := &countingReader{}
	app := &cli.App{Stdin: stdin, Stdout: &stdout, Stderr: &stderr, Env: env, Version: testVersion, Executable: exe}
	code := cli.Main(ctx, app, args)
	return ran{stdout: stdout.String(), stderr: stderr.String(), code: code, stdinReads: stdin.reads.Load()}
}

// mustCLI is runCLI that requires exit 0.
func mustCLI(t *testing.T, env cli.Env, args ...string) string {
	t.Helper()
	r := runCLI(t, env, args...)
	if r.code != 0 {
		t.Fatalf("openprogram %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// fresh returns an environment with its own HOME and an OPENPROGRAM_HOME
// that does not exist yet, and that state directory.
func fresh(t *testing.T) (cli.Env, string) {
	t.Helper()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(root, "state")
	return append(homeVars(home), "OPENPROGRAM_HOME="+state), state
}

// firstLine returns s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// TestVersion: `version` and `--version` print the same four lines:
// version, commit, build date, Go version and platform.
func TestVersion(t *testing.T) {
	env, _ := fresh(t)
	want := "openprogram " + testVersion + "\ncommit unknown\nbuilt unknown\n" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	for _, args := range [][]string{{"version"}, {"--version"}, {"--version", "mcp", "serve"}} {
		r := runCLI(t, env, args...)
		if r.code != 0 || r.stdout != want || r.stderr != "" {
			t.Errorf("%v = exit %d stdout %q stderr %q, want 0 %q \"\"", args, r.code, r.stdout, r.stderr, want)
		}
	}
}

// TestHelp: --help and `help` print the usage on stdout with the
// environment variables the program reads; `help CMD` that command's.
func TestHelp(t *testing.T) {
	env, _ := fresh(t)
	for _, args := range [][]string{{"--help"}, {"help"}} {
		r := runCLI(t, env, args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "Usage: openprogram <command>") {
			t.Errorf("%v = exit %d stdout %q, want 0 and the usage", args, r.code, r.stdout)
		}
		for _, word := range []string{"mcp install", "config", "sessions", "tools", "audit", "doctor", "version", "completion",
			"$OPENPROGRAM_HOME", "$OPENPROGRAM_PROFILE", "OPENPROGRAM_MCP_TOKEN", "OPENPROGRAM_DATABASE_URL", "--version"} {
			if !strings.Contains(r.stdout, word) {
				t.Errorf("%v does not mention %q", args, word)
			}
		}
	}
	r := runCLI(t, env, "help", "mcp", "serve")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Usage: openprogram mcp serve") ||
		!strings.Contains(r.stdout, "$OPENPROGRAM_LOG_LEVEL") || !strings.Contains(r.stdout, "--log-file") {
		t.Errorf("help mcp serve = exit %d stdout %q", r.code, r.stdout)
	}
}

// TestMissingCommand: a bare call, and a command group without its
// subcommand, print that group's usage and one Error line on stderr, exit 2.
func TestMissingCommand(t *testing.T) {
	for _, args := range [][]string{{}, {"mcp", "token"}, {"config"}, {"frobnicate"}} {
		env, _ := fresh(t)
		r := runCLI(t, env, args...)
		lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
		last := lines[len(lines)-1]
		if r.code != cli.ExitUsage || r.stdout != "" || !strings.HasPrefix(r.stderr, "Usage: openprogram") ||
			!strings.HasPrefix(last, "Error: ") || !strings.Contains(last, "--help") || strings.Count(r.stderr, "Error: ") != 1 {
			t.Errorf("%v = exit %d stdout %q stderr %q, want 2, the usage and one Error line", args, r.code, r.stdout, r.stderr)
		}
	}
}

// TestGlobalFlagsAndEnv: --home and --profile pick the state directory,
// over OPENPROGRAM_HOME / OPENPROGRAM_PROFILE in the environment given.
func TestGlobalFlagsAndEnv(t *testing.T) {
	env, state := fresh(t)
	other := filepath.Join(t.TempDir(), "other")
	if got := mustCLI(t, env, "mcp", "token", "path"); got != filepath.Join(state, "mcp_server_token")+"\n" {
		t.Errorf("token path from OPENPROGRAM_HOME = %q", got)
	}
	if got := mustCLI(t, env, "--home", other, "mcp", "token", "path"); got != filepath.Join(other, "mcp_server_token")+"\n" {
		t.Errorf("token path with --home = %q, want the flag to win", got)
	}
	home := filepath.Dir(strings.TrimSuffix(state, string(filepath.Separator)))
	home = filepath.Join(home, "home")
	if got := mustCLI(t, homeVars(home), "--profile", "work", "mcp", "token", "path"); got != filepath.Join(home, ".openprogram-work", "mcp_server_token")+"\n" {
		t.Errorf("token path with --profile = %q", got)
	}
}

// TestUsageErrors: every mistake in the command line exits 2 with one
// "Error: ..." line on stderr and nothing on stdout.
func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--no-such-flag", "version"},
		{"config", "get"},
		{"config", "set", "model.name"},
		{"config", "get", "no.such_key"},
		{"config", "set", "no.such_key", "1"},
		{"config", "unset", "nosection"},
		{"audit", "tail", "-n", "0"},
		{"audit", "tail", "-n", "10001"},
		{"audit", "tail", "-n", "abc"},
		{"sessions", "list", "-n", "0"},
		{"sessions", "show"},
		{"mcp", "client-config", "--client", "notepad"},
		{"mcp", "install"},
		{"mcp", "install", "--client", "claude-desktop", "--scope", "project"},
		{"mcp", "serve", "--token", "x"},
		{"mcp", "serve", "--log-level", "loud"},
		{"mcp", "token", "rotate"},
		{"completion", "tcsh"},
		{"version", "extra"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			env, state := fresh(t)
			r := runCLI(t, env, args...)
			if r.code != cli.ExitUsage {
				t.Errorf("exit %d, want %d\nstderr: %s", r.code, cli.ExitUsage, r.stderr)
			}
			if !strings.HasPrefix(r.stderr, "Error: ") || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("stderr = %q, want one \"Error: ...\" line", r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want empty", r.stdout)
			}
			if _, err := os.Stat(filepath.Join(state, "config.json")); err == nil {
				t.Errorf("a usage error wrote config.json")
			}
		})
	}
}
