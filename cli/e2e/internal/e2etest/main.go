package e2etest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

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
// builds ./cmd/openprogram of the cli module into a temporary directory
// (BinPath) as b says, runs the tests, checks that no goroutine leaked, and
// exits with their status.
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

// buildBinary builds ./cmd/openprogram of the cli module into out.
func buildBinary(out string, b Build) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("find the go command to build the binary: %w", err)
	}
	module, err := moduleDir()
	if err != nil {
		return err
	}
	args := []string{"build", "-o", out}
	env := append(os.Environ(), "GOWORK=off")
	switch b {
	case ReleaseBuild:
		args = append(args, "-trimpath", "-ldflags", "-s -w -X main.version=e2e-test")
		env = append(env, "CGO_ENABLED=0")
	default:
		if raceEnabled {
			args = append(args, "-race")
		}
		args = append(args, "-ldflags", "-X main.version=e2e-test")
	}
	args = append(args, "./cmd/openprogram")
	// No bound of its own: on a loaded 2-core machine a cold build of the
	// whole module takes many minutes, and go test's -timeout bounds the run.
	cmd := exec.Command(goBin, args...)
	cmd.Dir = module
	cmd.Env = env
	if outb, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %v: %w\n%s", args, err, outb)
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
