package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// binPath is the openprogram binary TestMain builds for the whole run.
var binPath string

func TestMain(m *testing.M) {
	runFrameTeeIfAsked() // started as the server by an interop client: tee and exit
	dir, err := os.MkdirTemp("", "openprogram-e2e-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: create the build directory: %v\n", err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "openprogram")
	if err := buildBinary(binPath); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// buildBinary builds ./cmd/openprogram of the cli module (the parent of this
// package's directory) into out, with -race when the tests run with it, so
// data races in the server fail the tests (the server then exits 66).
func buildBinary(out string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("find the go command to build the binary: %w", err)
	}
	args := []string{"build", "-o", out}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "-ldflags", "-X main.version=e2e-test", "./cmd/openprogram")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if outb, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %v: %w\n%s", args, err, outb)
	}
	return nil
}
