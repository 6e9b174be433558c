package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCompletionBash: the bash script, loaded into a real bash, completes
// commands, subcommands, flags and enum values.
func TestCompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		missingTool(t, "the completion script is checked with bash: %v", err)
	}
	env, _ := fresh(t)
	script := filepath.Join(t.TempDir(), "openprogram.bash")
	if err := os.WriteFile(script, []byte(mustCLI(t, env, "completion", "bash")), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		line string // words typed, the last one being completed
		want []string
	}{
		{"openprogram ", []string{"mcp", "config", "completion", "doctor"}},
		{"openprogram mcp to", []string{"token"}},
		{"openprogram mcp token ", []string{"create", "path", "rotate"}},
		{"openprogram mcp install --client ", []string{"claude-desktop", "claude-code", "cursor", "vscode", "codex", "opencode", "gemini"}},
		{"openprogram mcp install --client co", []string{"codex"}},
		{"openprogram mcp serve --log-", []string{"--log-level", "--log-format", "--log-file"}},
		{"openprogram completion ", []string{"bash", "zsh", "fish"}},
		{"openprogram config set ", []string{"agent.max_steps", "model.script", "mcp_server.exposed_tools"}},
		{"openprogram config get model.p", []string{"model.provider"}},
		{"openprogram --home /tmp/x config unset age", []string{"agent.max_steps", "agent.work_dirs"}},
	} {
		words := strings.Split(tc.line, " ")
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + w + "'"
		}
		prog := ". " + script + "\nCOMP_WORDS=(" + strings.Join(quoted, " ") + ")\nCOMP_CWORD=" +
			strconv.Itoa(len(words)-1) + "\n_openprogram\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		out, err := exec.CommandContext(ctx, bash, "--norc", "-c", prog).CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("bash: %v\n%s", err, out)
		}
		got := strings.Fields(string(out))
		for _, w := range tc.want {
			if !strings.Contains(" "+strings.Join(got, " ")+" ", " "+w+" ") {
				t.Errorf("completing %q = %v, want it to offer %q", tc.line, got, w)
			}
		}
	}
}

// TestCompletionZshFish: the zsh and fish scripts are valid for their
// shell (checked with zsh -n / fish -n where installed; bash -n reads the
// zsh one too, which is the bash script behind bashcompinit).
func TestCompletionZshFish(t *testing.T) {
	env, _ := fresh(t)
	dir := t.TempDir()
	checked := 0
	for _, sh := range []struct{ shell, checker string }{{"zsh", "zsh"}, {"zsh", "bash"}, {"fish", "fish"}} {
		out := mustCLI(t, env, "completion", sh.shell)
		if !strings.Contains(out, "openprogram") {
			t.Errorf("completion %s = %q", sh.shell, out)
		}
		path, err := exec.LookPath(sh.checker)
		if err != nil {
			t.Logf("%s is not installed: the %s script is not syntax-checked here", sh.checker, sh.shell)
			continue
		}
		file := filepath.Join(dir, sh.shell+"."+sh.checker)
		if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(path, "-n", file).CombinedOutput(); err != nil {
			t.Errorf("%s -n on the %s script: %v\n%s", sh.checker, sh.shell, err, out)
		}
		checked++
	}
	if checked == 0 {
		missingTool(t, "no shell could check the zsh and fish scripts")
	}
}
