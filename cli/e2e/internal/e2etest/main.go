package e2etest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// BinPath is the openprogram binary Main builds for the whole run of a test
// package.
var BinPath string

// Build says how Main builds the binary.
type Build int

const (
	// TestBuild is the binary the protocol and client tests drive: built with
	// -race when the tests run with -race, so a data race in the server fails
	// the tests (the server then exits 66).
	TestBuild Build = iota
	// ReleaseBuild is the binary as make dist builds it: static (CGO_ENABLED=0),
	// -trimpath, -ldflags "-s -w", never -race. The distribution tests check
	// packaging, not races, and a -race binary is several times larger to pack.
	ReleaseBuild
)

// Main is the TestMain of every end-to-end package: when this process was
// started through a FrameTee link it runs the tee and exits; otherwise it
// builds ./cmd/openprogram of the cli module as b says (linked once for all
// the packages of a run, see sharedBuild) into a temporary directory
// (BinPath), runs the tests, checks that no goroutine leaked, and exits with
// their status.
func Main(m *testing.M, b Build) {
	runFrameTeeIfAsked() // started as the server by an interop client: tee and exit
	dir, err := os.MkdirTemp("", "openprogram-e2e-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: create the build directory: %v\n", err)
		os.Exit(1)
	}
	BinPath = filepath.Join(dir, "openprogram")
	if err := buildBinary(BinPath, b); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// buildBinary builds ./cmd/openprogram of the cli module into out: through
// the checkout's shared slot for b (sharedBuild) when there is a user cache
// directory, else straight into out.
func buildBinary(out string, b Build) error {
	module, err := moduleDir()
	if err != nil {
		return err
	}
	var args, env []string
	switch b {
	case ReleaseBuild:
		args = []string{"-trimpath", "-ldflags", "-s -w -X main.version=e2e-test"}
		env = []string{"CGO_ENABLED=0"}
	default:
		if raceEnabled {
			args = append(args, "-race")
		}
		args = append(args, "-ldflags", "-X main.version=e2e-test")
	}
	const pkg = "./cmd/openprogram"
	cache, err := os.UserCacheDir()
	if err != nil {
		return goBuild(module, pkg, out, args, env)
	}
	// One slot per checkout and build: other checkouts on the machine build
	// other sources.
	sum := sha256.Sum256([]byte(module))
	slot := fmt.Sprintf("openprogram-%s-%s", buildName(b), hex.EncodeToString(sum[:])[:12])
	err = sharedBuild(filepath.Join(cache, "openprogram-e2e"), slot, module, pkg, out, args, env...)
	if errors.Is(err, errNoCache) {
		return goBuild(module, pkg, out, args, env)
	}
	return err
}

// errNoCache is sharedBuild's error when the cache itself cannot be used
// (a read-only or missing home directory): the binary is then built
// without it.
var errNoCache = errors.New("the binary cache cannot be used")

// slotMaxAge is how long a slot's binary stays after its last link: a
// checkout that is gone, or has not run its end-to-end tests for this
// long, gives its ~100 MB back (pruneSlots).
const slotMaxAge = 14 * 24 * time.Hour

// pruneSlots removes from cache the binaries (and any work directory) of
// the slots other than keep that were last linked more than slotMaxAge
// ago and whose lock no run holds. Lock files stay: removing one that
// another run is about to open would give two runs two locks.
func pruneSlots(cache, keep string) {
	entries, err := os.ReadDir(cache)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if name == keep || !e.Type().IsRegular() || filepath.Ext(name) != "" || !strings.HasPrefix(name, "openprogram-") {
			continue
		}
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < slotMaxAge {
			continue
		}
		target := filepath.Join(cache, name)
		lock, err := os.OpenFile(target+".lock", os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			continue
		}
		if lockFile(lock, false) == nil {
			os.Remove(target)
			os.RemoveAll(target + ".work")
		}
		lock.Close()
	}
}

// buildName names a build in its slot.
func buildName(b Build) string {
	switch {
	case b == ReleaseBuild:
		return "release"
	case raceEnabled:
		return "race"
	}
	return "test"
}

// sharedBuild builds pkg of module with go build's flags args into
// cache/slot, holding cache/slot.lock, and copies the binary to out. Every
// end-to-end package builds the same binary, and go build does not link
// again when the slot's file is up to date (its build ID matches the
// sources and flags), so only the first package of a run pays for the link
// (about 18 s under -race on a loaded 2-core machine, 1.5 s when up to date).
// The copy keeps a package's binary its own while another run changes the
// slot. Slots of other checkouts not linked for slotMaxAge are pruned.
func sharedBuild(cache, slot, module, pkg, out string, args []string, env ...string) error {
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return fmt.Errorf("%w: create %s: %w", errNoCache, cache, err)
	}
	target := filepath.Join(cache, slot)
	lock, err := os.OpenFile(target+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("%w: open its lock: %w", errNoCache, err)
	}
	defer lock.Close()
	if err := lockFile(lock, true); err != nil {
		return fmt.Errorf("%w: take its lock: %w", errNoCache, err)
	}
	defer unlockFile(lock)
	pruneSlots(cache, slot)
	// go build links in its work directory and renames the result onto the
	// target when both are on one file system: with the work directory
	// beside the slot, a build cut short leaves the old binary or the new
	// one, never a partial file whose build ID would pass as up to date. A
	// work directory left by such a build is removed here, under the lock.
	work := target + ".work"
	if err := os.RemoveAll(work); err != nil {
		return fmt.Errorf("remove the binary cache's old work directory: %w", err)
	}
	if err := os.Mkdir(work, 0o700); err != nil {
		return fmt.Errorf("create the binary cache's work directory: %w", err)
	}
	defer os.RemoveAll(work)
	if err := goBuild(module, pkg, target, args, append(env, "GOTMPDIR="+work)); err != nil {
		return err
	}
	return copyExecutable(target, out)
}

// goBuild runs go build -o out args pkg in module with env added.
func goBuild(module, pkg, out string, args, env []string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("find the go command to build the binary: %w", err)
	}
	full := append(append([]string{"build", "-o", out}, args...), pkg)
	// No bound of its own: on a loaded 2-core machine a cold build of the
	// whole module takes many minutes, and go test's -timeout bounds the run.
	cmd := exec.Command(goBin, full...)
	cmd.Dir = module
	cmd.Env = append(append(os.Environ(), "GOWORK=off"), env...)
	if outb, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %v: %w\n%s", full, err, outb)
	}
	return nil
}

// copyExecutable copies the file src to a new executable dst.
func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("open the built binary: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return fmt.Errorf("create the package's binary: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy the built binary to %s: %w", dst, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("copy the built binary to %s: %w", dst, err)
	}
	return nil
}

// moduleDir is the cli module's directory: the nearest directory above the
// test's working directory (its package directory) that holds go.mod.
func moduleDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the cli module: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find the cli module: no go.mod above the test's directory; run the tests from inside the cli module")
		}
		dir = parent
	}
}

// RepoRoot is the repository root: the parent of the cli module.
func RepoRoot(t testing.TB) string {
	t.Helper()
	module, err := moduleDir()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(module)
}
