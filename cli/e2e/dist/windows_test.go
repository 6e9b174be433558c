package dist

import (
	"archive/zip"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/cli/e2e/internal/e2etest"
)

// TestDistWindows builds the windows/amd64 release files as make dist
// does (a cross-compiled openprogram.exe): the zip archive carries
// openprogram.exe with the README, LICENSE, docs and completions (PowerShell's
// among them); the MCP
// bundle, packed and validated by the pinned mcpb CLI, runs
// server/openprogram.exe on win32 only; server.json lists it and
// SHA256SUMS covers the zip, the bundle and server.json.
func TestDistWindows(t *testing.T) {
	npm := e2etest.RequireTool(t, "npm")
	packaging := filepath.Join(e2etest.RepoRoot(t), "packaging")
	e2etest.NpmCI(t, npm, packaging)
	mcpbCLI := filepath.Join(packaging, "node_modules", ".bin", "mcpb")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	build := t.TempDir()
	exe := filepath.Join(build, "openprogram")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", exe, "./cmd/openprogram")
	cmd.Dir = filepath.Join(e2etest.RepoRoot(t), "cli")
	cmd.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build for windows/amd64: %v\n%s", err, out)
	}
	extras := filepath.Join(build, "extras")
	distStep(t, "extras", e2etest.BinPath, extras)

	out := t.TempDir()
	name := "openprogram_windows_amd64"
	distStep(t, "archive", exe, "windows", "amd64", extras, out)
	zr, err := zip.OpenReader(filepath.Join(out, name+".zip"))
	if err != nil {
		t.Fatalf("the Windows archive is no zip: %v", err)
	}
	var files []string
	for _, f := range zr.File {
		if !f.FileInfo().IsDir() {
			files = append(files, f.Name)
		}
	}
	zr.Close()
	for _, want := range []string{name + "/openprogram.exe", name + "/README.md", name + "/LICENSE", name + "/docs/contract.md",
		name + "/completions/openprogram.bash", name + "/completions/openprogram.ps1", name + "/man/openprogram.1"} {
		if !slices.Contains(files, want) {
			t.Errorf("the zip lacks %s (it holds %v)", want, files)
		}
	}
	if slices.Contains(files, name+"/openprogram") {
		t.Error("the zip holds openprogram without .exe")
	}
	if _, err := os.Stat(filepath.Join(out, name+".tar.gz")); err == nil {
		t.Error("a tar.gz was made for Windows")
	}

	distStep(t, "mcpb", exe, "windows", "amd64", "1.2.3", out)
	bundle := filepath.Join(out, name+".mcpb")
	unpacked := filepath.Join(t.TempDir(), "bundle")
	for _, args := range [][]string{{"unpack", bundle, unpacked}, {"validate", filepath.Join(unpacked, "manifest.json")}} {
		if b, err := exec.CommandContext(ctx, mcpbCLI, args...).CombinedOutput(); err != nil {
			t.Fatalf("mcpb %s: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
	var manifest struct {
		Server struct {
			EntryPoint string `json:"entry_point"`
			MCPConfig  struct {
				Command string `json:"command"`
			} `json:"mcp_config"`
		} `json:"server"`
		Compatibility struct {
			Platforms []string `json:"platforms"`
		} `json:"compatibility"`
	}
	readJSON(t, filepath.Join(unpacked, "manifest.json"), &manifest)
	if manifest.Server.EntryPoint != "server/openprogram.exe" || manifest.Server.MCPConfig.Command != "${__dirname}/server/openprogram.exe" {
		t.Errorf("manifest server = %+v, want server/openprogram.exe run from ${__dirname}", manifest.Server)
	}
	if diff := cmp.Diff([]string{"win32"}, manifest.Compatibility.Platforms); diff != "" {
		t.Errorf("compatibility.platforms (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(unpacked, "server", "openprogram.exe")); err != nil {
		t.Errorf("the bundle holds no server/openprogram.exe: %v", err)
	}

	distServerJSON(t, out, bundle, name+".zip")

	// The README's PowerShell install fetches this archive by the name
	// make dist gives it and compares its hash with SHA256SUMS first.
	readme, err := os.ReadFile(filepath.Join(e2etest.RepoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, _ := strings.Cut(string(readme), "```powershell\n")
	block, _, _ = strings.Cut(block, "```")
	for _, want := range []string{`$name = "openprogram_windows_$arch"`, `"$base/$name.zip"`, `"$base/SHA256SUMS"`, `Get-FileHash "$name.zip" -Algorithm SHA256`, `throw`, `Expand-Archive`, `openprogram.exe`} {
		if !strings.Contains(block, want) {
			t.Errorf("the README's PowerShell install lacks %q:\n%s", want, block)
		}
	}
	if strings.Index(block, "Get-FileHash") > strings.Index(block, "Expand-Archive") {
		t.Error("the README's PowerShell install unpacks the zip before it checks it")
	}
}
