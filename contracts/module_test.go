package contracts_test

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/internal/wine"
)

const goSDK = "github.com/modelcontextprotocol/go-sdk"

// TestGoModPinsGoSDK: go.mod requires go-sdk at exactly v1.8.0, once, not
// replaced.
func TestGoModPinsGoSDK(t *testing.T) {
	data, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatalf("read go.mod: %v", err)
	}
	var versions []string
	for line := range strings.Lines(string(data)) {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(fields) >= 2 && fields[0] == goSDK {
			versions = append(versions, fields[1])
		}
		if strings.HasPrefix(strings.TrimSpace(line), "replace") || strings.Contains(line, "=>") {
			if strings.Contains(line, goSDK) {
				t.Errorf("go.mod replaces go-sdk: %q", strings.TrimSpace(line))
			}
		}
	}
	if diff := cmp.Diff([]string{"v1.8.0"}, versions); diff != "" {
		t.Errorf("go-sdk requirements in go.mod mismatch (-want +got):\n%s", diff)
	}

	// And the build list (what the go command links) agrees.
	out := goCommand(t, "list", "-m", "-f", "{{.Version}} {{if .Replace}}replaced{{end}}", goSDK)
	if got := strings.TrimSpace(string(out)); got != "v1.8.0" {
		t.Errorf("go list -m %s = %q, want %q", goSDK, got, "v1.8.0")
	}
}

// goCommand runs the go command in the module directory, outside any
// workspace, and returns its standard output.
func goCommand(t *testing.T, args ...string) []byte {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil && wine.Detected() {
		t.Skip("the go command is not on Wine's PATH; the module graph is the same on every system, the Linux run checks it")
	}
	if err != nil {
		t.Fatalf("the go command is needed by this test: %v", err)
	}
	cmd := exec.Command(goTool, args...)
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

func TestProtocolVersions(t *testing.T) {
	if contracts.ProtocolVersion != "2025-11-25" {
		t.Errorf("ProtocolVersion = %q, want %q", contracts.ProtocolVersion, "2025-11-25")
	}
	want := []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
	got := contracts.SupportedProtocolVersions()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SupportedProtocolVersions() mismatch (-want +got):\n%s", diff)
	}
	got[0] = "changed"
	if contracts.SupportedProtocolVersions()[0] != contracts.ProtocolVersion {
		t.Errorf("SupportedProtocolVersions() shares its slice between calls")
	}
	// Every version is one go-sdk can negotiate (mcp.NewServer panics on
	// others), and the newer draft go-sdk also knows is left out.
	sdk := mcp.SupportedProtocolVersions()
	for _, v := range want {
		if !slices.Contains(sdk, v) {
			t.Errorf("go-sdk does not support protocol version %s", v)
		}
	}
	if slices.Contains(contracts.SupportedProtocolVersions(), "2026-07-28") {
		t.Errorf("SupportedProtocolVersions() offers 2026-07-28")
	}
}

// TestDependencyGraph keeps contracts light for client projects: neither the
// package nor its tests may pull in the store drivers, the CLI framework,
// model SDKs, testcontainers or a JSON Schema library (internal/schema is
// the one validator); of this repository it may import only the internal
// module.
func TestDependencyGraph(t *testing.T) {
	out := goCommand(t, "list", "-deps", "-test", "./...")
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, goSDK+"/mcp") || !slices.Contains(deps, "github.com/openprogram/openprogram/internal/schema") {
		t.Fatalf("go list output lacks the known dependencies; got:\n%s", out)
	}
	forbidden := []string{
		// internal/schema is the one JSON Schema validator.
		"github.com/santhosh-tekuri/jsonschema",
		"github.com/jackc/pgx", "modernc.org/sqlite", "github.com/alecthomas/kong",
		"github.com/openai/openai-go", "github.com/anthropics/anthropic-sdk-go",
		"github.com/testcontainers", "github.com/openprogram/openprogram/",
	}
	for _, dep := range deps {
		for _, bad := range forbidden {
			if strings.HasPrefix(dep, bad) && !strings.HasPrefix(dep, "github.com/openprogram/openprogram/contracts") && !strings.HasPrefix(dep, "github.com/openprogram/openprogram/internal/") {
				t.Errorf("contracts depends on %s", dep)
			}
		}
	}
}

// TestNoGeneratorLinked: a program that imports contracts (the server, a
// client project) links no schema generator: the six schemas are generated
// at build time (schemas_gen.go), and invopop/jsonschema is for the test
// that generates them alone.
func TestNoGeneratorLinked(t *testing.T) {
	out := goCommand(t, "list", "-deps", "./...")
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/invopop/jsonschema") {
			t.Errorf("a program importing contracts links %s; generate the schemas at build time instead", dep)
		}
	}
}
