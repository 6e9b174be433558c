package cli

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/openprogram/openprogram/internal/privatefile"
	"github.com/openprogram/openprogram/tokenauth"
)

// TaskLogFileName is the log file the detached task runners append to, in
// the state directory (mode 0600).
const TaskLogFileName = "mcp-tasks.log"

// taskSpawner starts the detached runner of a durable MCP task: this same
// binary as `openprogram mcp run-task <id>`, in a session of its own (no
// signal meant for the `mcp serve` that started it, or for that process's
// group, reaches it), stdin /dev/null, stdout and stderr appended to
// TaskLogFileName. Its environment is the one `mcp serve` runs with, which
// the host needs (the model's key, the variables model.headers names, the
// store override), with the state directory fixed and without the client's
// token: the runner is no client, and reads the task's client from the
// store. Nothing secret goes into argv, which other users can read.
type taskSpawner struct {
	exe       string   // the openprogram binary, absolute
	stateDir  string   // absolute
	env       []string // the serve process's environment
	logLevel  string
	logFormat string
}

// start starts the runner of task id of the client with clientID and
// returns once it runs; the runner is reaped by this process while it
// lives, else by init. It has the signature of host.Options.StartTask.
func (s taskSpawner) start(_ context.Context, clientID, id string) error {
	if !filepath.IsAbs(s.exe) {
		return errors.New("start the task runner: the path of the openprogram binary is unknown")
	}
	log, err := privatefile.OpenAppend(filepath.Join(s.stateDir, TaskLogFileName))
	if err != nil {
		return fmt.Errorf("start the task runner: %w", err)
	}
	defer log.Close() // the child has its own copy
	// Not CommandContext: the runner must outlive the request, the
	// connection and this process.
	cmd := exec.Command(s.exe, "mcp", "run-task", "--log-level", s.logLevel, "--log-format", s.logFormat,
		"--client", clientID, "--", id)
	cmd.Env = runnerEnv(s.env, s.stateDir)
	cmd.Dir = filepath.VolumeName(s.stateDir) + string(filepath.Separator)
	cmd.Stdin = nil // the null device
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = detached()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the task runner %s: %w", s.exe, err)
	}
	go func() { _ = cmd.Wait() }()
	return nil
}

// runnerEnv is env without the MCP token and with the state directory
// given by OPENPROGRAM_HOME alone (the profile and the flag it came from are
// resolved already).
func runnerEnv(env []string, stateDir string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case tokenauth.EnvVar, EnvHome, EnvProfile:
			continue
		}
		out = append(out, kv)
	}
	return append(out, EnvHome+"="+stateDir)
}
