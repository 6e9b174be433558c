package dist

// Distribution tests: the release files a newcomer downloads, built by the
// same steps as `make dist` (packaging/dist.sh) for the host platform only
// (cross-compiling the four platforms is make dist's job, not the tests').
//
//   - TestDistInstallSnippet: the README's install lines, as written, against
//     a local archive and a fresh HOME.
//   - TestDistBundle: the MCP bundle, packed, validated and inspected by the
//     mcpb CLI pinned in packaging/package-lock.json, unpacked and started with
//     the environment its manifest maps (computed by mcpb's own code), driven
//     through initialize and prompt_send; then server.json, validated against
//     the MCP registry's published schema, and SHA256SUMS.
//
// The bundle test installs the mcpb CLI itself (npm ci, scripts off); without
// node/npm it skips, except under CI=true, where it fails.

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/cli/e2e/internal/e2etest"
	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/internal/schema"
)

// distHost skips on a platform the release does not ship.
func distHost(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" || runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("the release ships linux and darwin, amd64 and arm64; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
}

// distStep runs one packaging/dist.sh step and returns its stdout.
func distStep(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(e2etest.RepoRoot(t), "packaging", "dist.sh"), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("packaging/dist.sh %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// readmeInstallLines returns the README's install snippet: the first sh
// block of "Install and connect a client", without the download lines.
func readmeInstallLines(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(e2etest.RepoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "## Install and connect a client")
	if !ok {
		t.Fatal("README.md has no \"## Install and connect a client\" section")
	}
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatal("the install section has no sh block")
	}
	block, _, _ = strings.Cut(block, "```")
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(block), "\n") {
		if strings.HasPrefix(l, "curl ") {
			continue // no network here: the test puts the archive where curl would
		}
		lines = append(lines, l)
	}
	if len(lines) < 2 {
		t.Fatalf("the install snippet has %d lines besides curl: %q", len(lines), lines)
	}
	return lines
}

// TestDistInstallSnippet: the README's tar and install lines work as written
// on a fresh HOME (no ~/.local/bin yet), and the archive carries what the
// README links to: LICENSE, docs/, the man page and the completions.
func TestDistInstallSnippet(t *testing.T) {
	distHost(t)
	t.Parallel()
	tmp := t.TempDir()
	extras, dl, home := filepath.Join(tmp, "extras"), filepath.Join(tmp, "download"), filepath.Join(tmp, "home")
	for _, d := range []string{dl, home} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	distStep(t, "extras", e2etest.BinPath, extras)
	distStep(t, "archive", e2etest.BinPath, runtime.GOOS, runtime.GOARCH, extras, dl)
	name := "openprogram_" + runtime.GOOS + "_" + runtime.GOARCH

	members := tarMembers(t, filepath.Join(dl, name+".tar.gz"))
	for _, want := range []string{"openprogram", "README.md", "LICENSE", "docs/contract.md", "docs/operations.md",
		"man/openprogram.1", "completions/openprogram.bash", "completions/_openprogram", "completions/openprogram.fish", "completions/openprogram.ps1"} {
		if mode, ok := members[name+"/"+want]; !ok {
			t.Errorf("the archive lacks %s/%s", name, want)
		} else if want == "openprogram" && mode&0o111 == 0 {
			t.Errorf("%s/openprogram has mode %o, want executable", name, mode)
		}
	}

	lines := readmeInstallLines(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-euo", "pipefail", "-c", strings.Join(lines, "\n"))
	cmd.Dir = dl
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the README's install lines on a fresh HOME failed: %v\n%s\nlines:\n%s", err, out, strings.Join(lines, "\n"))
	}
	installed := filepath.Join(home, ".local", "bin", "openprogram")
	out, err := exec.CommandContext(ctx, installed, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", installed, err)
	}
	if !strings.HasPrefix(string(out), "openprogram e2e-test\n") {
		t.Errorf("the installed binary says %q, want \"openprogram e2e-test\" first", out)
	}
}

// tarMembers lists a .tar.gz: name -> permission bits.
func tarMembers(t *testing.T, path string) map[string]os.FileMode {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tr := tar.NewReader(zr)
	out := map[string]os.FileMode{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out[strings.TrimSuffix(h.Name, "/")] = h.FileInfo().Mode().Perm()
	}
}

// TestDistBundle packs the host platform's MCP bundle as make dist does and
// treats it as Claude Desktop would, then builds and checks server.json and
// SHA256SUMS over it.
func TestDistBundle(t *testing.T) {
	distHost(t)
	node := e2etest.RequireTool(t, "node")
	npm := e2etest.RequireTool(t, "npm")
	packaging := filepath.Join(e2etest.RepoRoot(t), "packaging")
	e2etest.NpmCI(t, npm, packaging)
	mcpbCLI := filepath.Join(packaging, "node_modules", ".bin", "mcpb")

	out := t.TempDir()
	distStep(t, "mcpb", e2etest.BinPath, runtime.GOOS, runtime.GOARCH, "1.2.3", out)
	name := "openprogram_" + runtime.GOOS + "_" + runtime.GOARCH
	bundle := filepath.Join(out, name+".mcpb")

	run := func(t *testing.T, exe string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		b, err := exec.CommandContext(ctx, exe, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", filepath.Base(exe), strings.Join(args, " "), err, b)
		}
		return string(b)
	}
	if info := run(t, mcpbCLI, "info", bundle); !strings.Contains(info, name+".mcpb") {
		t.Errorf("mcpb info does not name the bundle:\n%s", info)
	}
	unpacked := filepath.Join(t.TempDir(), "bundle")
	run(t, mcpbCLI, "unpack", bundle, unpacked)
	run(t, mcpbCLI, "validate", filepath.Join(unpacked, "manifest.json"))

	// The zip keeps the binary executable, and nothing but the three files.
	zr, err := zip.OpenReader(bundle)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range zr.File {
		files = append(files, f.Name)
		if f.Name == "server/openprogram" && f.Mode().Perm()&0o111 == 0 {
			t.Errorf("server/openprogram has mode %o in the bundle, want executable", f.Mode().Perm())
		}
	}
	zr.Close()
	slices.Sort(files)
	if diff := cmp.Diff([]string{"LICENSE", "manifest.json", "server/openprogram"}, files); diff != "" {
		t.Errorf("bundle files (-want +got):\n%s", diff)
	}

	var manifest struct {
		Version string `json:"version"`
		Server  struct {
			Type       string `json:"type"`
			EntryPoint string `json:"entry_point"`
		} `json:"server"`
		Compatibility struct {
			Platforms []string `json:"platforms"`
		} `json:"compatibility"`
		UserConfig map[string]struct {
			Type      string `json:"type"`
			Sensitive bool   `json:"sensitive"`
			Required  bool   `json:"required"`
		} `json:"user_config"`
	}
	readJSON(t, filepath.Join(unpacked, "manifest.json"), &manifest)
	if manifest.Version != "1.2.3" || manifest.Server.Type != "binary" || manifest.Server.EntryPoint != "server/openprogram" {
		t.Errorf("manifest version %q, server %+v; want 1.2.3, binary, server/openprogram", manifest.Version, manifest.Server)
	}
	if !slices.Equal(manifest.Compatibility.Platforms, []string{runtime.GOOS}) {
		t.Errorf("compatibility.platforms = %v, want [%s]", manifest.Compatibility.Platforms, runtime.GOOS)
	}
	for key, sensitive := range map[string]bool{"mcp_token": true, "model_api_key": true, "model_provider": false, "model_name": false, "model_base_url": false} {
		f, ok := manifest.UserConfig[key]
		if !ok || f.Type != "string" || f.Sensitive != sensitive {
			t.Errorf("user_config.%s = %+v (present %v), want a string with sensitive %v", key, f, ok, sensitive)
		}
	}
	if !manifest.UserConfig["mcp_token"].Required {
		t.Error("user_config.mcp_token is not required")
	}
	if f := manifest.UserConfig["model_allow_unencrypted_key"]; f.Type != "boolean" || f.Required {
		t.Errorf("user_config.model_allow_unencrypted_key = %+v, want an optional boolean", f)
	}

	t.Run("started as Claude Desktop starts it", func(t *testing.T) {
		distBundleServe(t, node, packaging, unpacked)
	})
	t.Run("server.json and SHA256SUMS", func(t *testing.T) {
		distServerJSON(t, out, bundle)
	})
}

// distBundleServe gives the unpacked bundle a state directory where its
// manifest says (~/.openprogram), with a token and a scripted model but no
// model.provider, lets mcpb work out the command and environment from the
// user_config a user would type (the token, provider "scripted"), starts the
// server with that environment alone, and completes initialize and
// prompt_send.
func distBundleServe(t *testing.T, node, packaging, unpacked string) {
	in := e2etest.NewBareInstall(t, e2etest.SQLite)
	in.Home = filepath.Join(in.UserHome, ".openprogram")
	in.CreateToken()
	in.Script(e2etest.Say("hello from the bundle"))
	in.MustRun("config", "unset", "model.provider")

	userConfig, _ := json.Marshal(map[string]string{"mcp_token": in.Token, "model_provider": "scripted"})
	ctx := e2etest.Ctx(t)
	resolve := exec.CommandContext(ctx, node, filepath.Join(packaging, "mcp-config.mjs"), unpacked, in.UserHome)
	resolve.Dir = packaging
	resolve.Stdin = bytes.NewReader(userConfig)
	var stderr bytes.Buffer
	resolve.Stderr = &stderr
	resolved, err := resolve.Output()
	if err != nil {
		t.Fatalf("mcp-config.mjs: %v\n%s", err, stderr.String())
	}
	var cfg struct {
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
	}
	if err := json.Unmarshal(resolved, &cfg); err != nil {
		t.Fatalf("mcp-config.mjs printed %q: %v", resolved, err)
	}
	if cfg.Command != filepath.Join(unpacked, "server", "openprogram") {
		t.Errorf("command = %q, want the bundle's server/openprogram", cfg.Command)
	}
	if cfg.Env["OPENPROGRAM_HOME"] != in.Home || cfg.Env["OPENPROGRAM_MCP_TOKEN"] != in.Token || cfg.Env["OPENPROGRAM_MODEL_PROVIDER"] != "scripted" {
		t.Errorf("env OPENPROGRAM_HOME=%q, token given %v, OPENPROGRAM_MODEL_PROVIDER=%q; want %q, true, scripted",
			cfg.Env["OPENPROGRAM_HOME"], cfg.Env["OPENPROGRAM_MCP_TOKEN"] == in.Token, cfg.Env["OPENPROGRAM_MODEL_PROVIDER"], in.Home)
	}
	// The opt-in left at its default reaches the server as "false", which
	// grants nothing and must not stop it.
	if got := cfg.Env["OPENPROGRAM_MODEL_ALLOW_UNENCRYPTED_KEY"]; got != "false" {
		t.Errorf("env OPENPROGRAM_MODEL_ALLOW_UNENCRYPTED_KEY = %q, want false", got)
	}
	var env []string
	for k, v := range cfg.Env {
		if strings.Contains(v, "${") {
			t.Errorf("env %s = %q: a placeholder left unfilled", k, v)
		}
		env = append(env, k+"="+v)
	}
	if slices.Contains(cfg.Args, in.Token) {
		t.Error("the token is on the command line")
	}
	// Nothing else: Claude Desktop passes no environment of its own.
	env = append(env, "GORACE=atexit_sleep_ms=0")

	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Env = env
	var serverErr e2etest.LockedBuffer
	cmd.Stderr = &serverErr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bundle", Version: "0"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: e2etest.ExitTimeout}, nil)
	if err != nil {
		t.Fatalf("connect to the bundle's server: %v\nstderr:\n%s", err, serverErr.String())
	}
	defer cs.Close()
	res, err := contracts.NewClient(cs).PromptSend(ctx, contracts.PromptSendArgs{Prompt: "hello"})
	if err != nil {
		t.Fatalf("prompt_send: %v\nstderr:\n%s", err, serverErr.String())
	}
	if res.Failed || !strings.Contains(res.Text, "hello from the bundle") {
		t.Errorf("prompt_send = %+v, want the scripted reply", res)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v\nstderr:\n%s", err, serverErr.String())
	}
	if strings.Contains(serverErr.String(), in.Token) {
		t.Error("the server's stderr holds the token")
	}
	// --log-file: the bundle's server also logs into the state directory.
	if _, err := os.Stat(filepath.Join(in.Home, "mcp-serve.log")); err != nil {
		t.Errorf("mcp-serve.log in the state directory: %v", err)
	}
}

// distServerJSON writes server.json for the bundle in out, validates it
// against the registry's published schema (vendored in packaging/testdata),
// checks its fileSha256, and that SHA256SUMS covers the files (the bundle,
// server.json and also).
func distServerJSON(t *testing.T, out, bundle string, also ...string) {
	testdata := filepath.Join(e2etest.RepoRoot(t), "packaging", "testdata")
	raw, err := os.ReadFile(filepath.Join(testdata, "server.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	pinned, err := os.ReadFile(filepath.Join(testdata, "server.schema.json.sha256"))
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(sum[:]); !strings.HasPrefix(string(pinned), got+" ") {
		t.Fatalf("packaging/testdata/server.schema.json has sha256 %s, not the published file's (%s)", got, strings.TrimSpace(string(pinned)))
	}
	// The registry's schema annotates its properties with OpenAPI's
	// "example", which JSON Schema does not define.
	s, err := schema.Compile(raw, schema.AllowAnnotations("example"))
	if err != nil {
		t.Fatalf("compile the registry schema: %v", err)
	}

	distStep(t, "server-json", "1.2.3", "v1.2.3", out)
	data, err := os.ReadFile(filepath.Join(out, "server.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := schema.Decode(data)
	if err != nil {
		t.Fatalf("server.json is not JSON: %v\n%s", err, data)
	}
	if v := s.Validate(doc); v != nil {
		t.Fatalf("server.json violates the registry schema at %s\n%s", v, data)
	}
	// The validator is live: what the registry refuses, it refuses too.
	var bad map[string]any
	if err := json.Unmarshal(data, &bad); err != nil {
		t.Fatal(err)
	}
	bad["description"] = strings.Repeat("x", 101)
	if v := s.Validate(bad); v == nil {
		t.Error("the schema accepts a 101-character description")
	}

	var sj struct {
		Name     string `json:"name"`
		Version  string `json:"version"`
		Packages []struct {
			RegistryType string `json:"registryType"`
			Identifier   string `json:"identifier"`
			FileSha256   string `json:"fileSha256"`
			Transport    struct {
				Type string `json:"type"`
			} `json:"transport"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(data, &sj); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	bsum := sha256.Sum256(b)
	want := "https://github.com/openprogram/openprogram/releases/download/v1.2.3/" + filepath.Base(bundle)
	if sj.Name != "io.github.openprogram/openprogram" || sj.Version != "1.2.3" || len(sj.Packages) != 1 ||
		sj.Packages[0].RegistryType != "mcpb" || sj.Packages[0].Identifier != want ||
		sj.Packages[0].FileSha256 != hex.EncodeToString(bsum[:]) || sj.Packages[0].Transport.Type != "stdio" {
		t.Errorf("server.json = %+v; want io.github.openprogram/openprogram 1.2.3 with one mcpb package %s, the bundle's sha256, stdio", sj, want)
	}

	distStep(t, "sums", out)
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(sums))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 2 {
			listed[strings.TrimPrefix(fields[1], "*")] = fields[0]
		}
	}
	for _, f := range append([]string{filepath.Base(bundle), "server.json"}, also...) {
		data, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if listed[f] != hex.EncodeToString(sum[:]) {
			t.Errorf("SHA256SUMS has %q for %s, want its sha256", listed[f], f)
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
