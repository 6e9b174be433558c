package authz_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/internal/wine"
)

// TestModuleGraph keeps this module's dependency graph to the standard
// library and the modules listed here: `GOWORK=off go list -m all` (the
// build list, tests' requirements included) names nothing else.
func TestModuleGraph(t *testing.T) {
	allowed := map[string]bool{
		"github.com/openprogram/openprogram/authz":    true,
		"github.com/openprogram/openprogram/internal": true,
		"golang.org/x/sys":                            true,
	}
	goTool, err := exec.LookPath("go")
	if err != nil && wine.Detected() {
		t.Skip("the go command is not on Wine's PATH; the graph is the same on every system, the Linux run checks it")
	}
	if err != nil {
		t.Fatalf("the go command is needed by this test: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-m", "-f", "{{.Path}}", "all")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m all: %v\n%s", err, stderr.String())
	}
	mods := strings.Fields(string(out))
	if len(mods) == 0 {
		t.Fatal("go list -m all printed nothing")
	}
	for _, m := range mods {
		if !allowed[m] {
			t.Errorf("the module graph holds %s; this module may depend on the standard library and %v only", m, allowed)
		}
	}
}
