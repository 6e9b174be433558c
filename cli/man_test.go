package cli_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestManPage: `openprogram man` prints a roff page generated from the
// command grammar: every visible command and flag is in it, the hidden
// commands are not, and groff renders it without a warning.
func TestManPage(t *testing.T) {
	env, _ := fresh(t)
	page := mustCLI(t, env, "man")
	if !strings.HasPrefix(page, ".TH OPENPROGRAM 1 ") {
		t.Fatalf("man page starts with %q, want a .TH OPENPROGRAM 1 line", firstLine(page))
	}
	for _, want := range []string{
		".SH NAME", ".SH SYNOPSIS", ".SH COMMANDS", ".SH ENVIRONMENT", ".SH FILES", ".SH EXIT STATUS",
		`openprogram mcp serve`, `openprogram mcp token rotate`, `openprogram completion`,
		`\-\-log\-level`, `\-\-home`, `OPENPROGRAM_MCP_TOKEN`, `OPENPROGRAM_MODEL_PROVIDER`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("man page lacks %q", want)
		}
	}
	if !strings.Contains(page, `.SS "openprogram mcp serve"`) {
		t.Errorf("man page has no .SS section for mcp serve")
	}
	for _, hidden := range []string{"openprogram help", "openprogram man"} {
		if strings.Contains(page, `.SS "`+hidden) {
			t.Errorf("man page documents the hidden command %q", hidden)
		}
	}
	for i, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(line, "'") {
			t.Errorf("line %d starts with a quote, which roff reads as a request: %q", i+1, line)
		}
	}
	groff, err := exec.LookPath("groff")
	if err != nil {
		if os.Getenv("CI") == "true" && groffRequired {
			t.Fatal("groff is not on PATH, so the page cannot be rendered; install groff-base (CI=true: the rendering check is required)")
		}
		t.Skip("groff is not on PATH: the page was not rendered")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, groff, "-man", "-Tutf8", "-ww", "-z")
	cmd.Stdin = strings.NewReader(page)
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("groff -man -ww: %v\n%s", err, out)
	}
}
