package e2etest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// strictCI reports whether the tests run in CI (CI=true, the same test pgtest
// makes for PostgreSQL), where a missing tool is a failure.
func strictCI() bool {
	return os.Getenv("CI") == "true"
}

// Missing skips the test for why, or fails it under CI=true.
func Missing(t *testing.T, why string) {
	t.Helper()
	if strictCI() {
		t.Fatalf("CI=true: %s", why)
	}
	t.Skipf("skipped (set CI=true to make this a failure): %s", why)
}

// RequireTool returns the path of the command name, or skips the test
// (fails it under CI=true) when it is not on PATH.
func RequireTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, fmt.Sprintf("%s is not on PATH; the interop tests need Node.js >= 20 and npm", name))
	}
	return p
}

// npmDirs holds a *sync.Mutex per npm project directory NpmCI installs.
var npmDirs sync.Map

// NpmCI installs dir's npm project from its lock file into dir/node_modules, unless
// the stamp written by the last successful install matches the lock file. One
// install runs at a time, among the tests of a package and across the test
// processes of every end-to-end package (go test runs packages side by side):
// each holds dir/.npm-ci.lock while it checks and installs.
func NpmCI(t *testing.T, npm, dir string) {
	t.Helper()
	// Parallel tests may share a project (two tests drive Codex): one
	// install at a time per directory, and the second sees the first's stamp.
	mu, _ := npmDirs.LoadOrStore(dir, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	npmLock, err := os.OpenFile(filepath.Join(dir, ".npm-ci.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatalf("open the npm install lock: %v", err)
	}
	defer npmLock.Close()
	if err := lockFile(npmLock, true); err != nil {
		t.Fatalf("take the npm install lock: %v", err)
	}
	defer unlockFile(npmLock)
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatalf("read the lock file: %v", err)
	}
	sum := sha256.Sum256(lock)
	want := hex.EncodeToString(sum[:]) + "\n"
	stamp := filepath.Join(dir, "node_modules", ".openprogram-interop-lock.sha256")
	if got, err := os.ReadFile(stamp); err == nil && string(got) == want {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil {
			t.Logf("npm ci skipped: %s/node_modules matches package-lock.json", filepath.Base(dir))
			return
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// Scripts stay off: nothing pinned here needs one, and none should run in CI.
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--prefer-offline", "--loglevel=error")
	cmd.Dir = dir
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
	if err := os.WriteFile(stamp, []byte(want), 0o644); err != nil {
		t.Fatalf("write the install stamp: %v", err)
	}
	t.Logf("npm ci in %s took %s", filepath.Base(dir), time.Since(start).Round(time.Millisecond))
}
