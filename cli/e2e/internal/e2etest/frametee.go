package e2etest

// The frame tee: interop clients (the TypeScript SDK, the Inspector) spawn the
// server themselves and show us no raw frames. FrameTee puts this test binary
// between them and the server: it is started as "openprogram" (a symlink to the
// test binary, next to a config file), runs the real binary, copies the client's
// stdin and the server's stdout through unchanged and records both, and exits as
// the server did. CheckFrameLogs then validates every frame the server wrote
// against the official MCP schema.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/openprogram/openprogram/mcpserver/schemacheck"
)

// teeConfigName is the file next to the "openprogram" symlink that makes the test
// binary run as a tee.
const teeConfigName = "frame-tee.json"

// maxFrame bounds one recorded frame line.
const maxFrame = 16 << 20

type teeConfig struct {
	Binary string `json:"binary"` // the real openprogram binary
	LogDir string `json:"log_dir"`
}

// FrameTee returns a path to start instead of BinPath: the same command line runs
// the server, and every frame both ways is recorded for CheckFrames, which the
// test's cleanup runs.
func FrameTee(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatalf("find the test binary for the frame tee: %v", err)
	}
	dir := t.TempDir()
	cfg, err := json.Marshal(teeConfig{Binary: BinPath, LogDir: filepath.Join(dir, "frames")})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "frames"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, teeConfigName), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "openprogram")
	if err := os.Symlink(self, link); err != nil {
		t.Fatalf("link the frame tee: %v", err)
	}
	t.Cleanup(func() {
		n, err := CheckFrameLogs(Validator, filepath.Join(dir, "frames"))
		if err != nil {
			t.Errorf("frames the server wrote: %v", err)
		}
		t.Logf("frame tee: %d server frames valid against the MCP schema", n)
	})
	return link
}

// runFrameTeeIfAsked runs the tee and exits when this process was started through
// a FrameTee symlink; otherwise it returns.
func runFrameTeeIfAsked() {
	if filepath.Base(os.Args[0]) != "openprogram" {
		return
	}
	data, err := os.ReadFile(filepath.Join(filepath.Dir(os.Args[0]), teeConfigName))
	if err != nil {
		return
	}
	var cfg teeConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "frame tee: read %s: %v\n", teeConfigName, err)
		syscall.Exit(70)
	}
	// syscall.Exit, not os.Exit: under -race, os.Exit runs the race detector's
	// exit hook, which sleeps a second (GORACE atexit_sleep_ms) and would make
	// the tee outlive the server by that much.
	syscall.Exit(runFrameTee(cfg, os.Args[1:]))
}

// runFrameTee runs cfg.Binary with args and returns the exit code to exit with;
// when the server dies of a signal it re-raises that signal.
func runFrameTee(cfg teeConfig, args []string) int {
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "frame tee: %s: %v\n", what, err)
		return 70
	}
	prefix := filepath.Join(cfg.LogDir, fmt.Sprint(os.Getpid()))
	inLog, err := os.Create(prefix + ".client")
	if err != nil {
		return fail("create the client frame log", err)
	}
	defer inLog.Close()
	outLog, err := os.Create(prefix + ".server")
	if err != nil {
		return fail("create the server frame log", err)
	}
	defer outLog.Close()

	cmd := exec.Command(cfg.Binary, args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fail("stdin pipe", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fail("stdout pipe", err)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		return fail("start the server", err)
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	go func() {
		// Client -> server; EOF on our stdin is EOF on the server's.
		_, _ = io.Copy(io.MultiWriter(stdin, inLog), os.Stdin)
		_ = stdin.Close()
	}()
	// Server -> client, all of it before Wait closes the pipe.
	_, copyErr := io.Copy(io.MultiWriter(os.Stdout, outLog), stdout)
	werr := cmd.Wait()
	signal.Stop(sigs)
	if copyErr != nil {
		fmt.Fprintf(os.Stderr, "frame tee: copy the server's stdout: %v\n", copyErr)
	}
	var ee *exec.ExitError
	switch {
	case errors.As(werr, &ee):
		if code, ok := dieLike(ee); ok {
			return code
		}
		return ee.ExitCode()
	case werr != nil:
		return fail("wait for the server", werr)
	}
	return 0
}

// CheckFrameLogs checks every <pid>.server log in dir against the frames of the
// matching <pid>.client log and returns how many server frames it checked. It
// fails when no process was recorded at all.
func CheckFrameLogs(v *schemacheck.Validator, dir string) (int, error) {
	servers, err := filepath.Glob(filepath.Join(dir, "*.server"))
	if err != nil {
		return 0, err
	}
	if len(servers) == 0 {
		return 0, errors.New("no server process ran through the frame tee")
	}
	sort.Strings(servers)
	total := 0
	var errs []error
	for _, s := range servers {
		out, err := os.ReadFile(s)
		if err != nil {
			return total, err
		}
		in, err := os.ReadFile(strings.TrimSuffix(s, ".server") + ".client")
		if err != nil {
			return total, err
		}
		n, err := CheckFrames(v, in, out)
		total += n
		if err != nil {
			errs = append(errs, fmt.Errorf("server process %s: %w", strings.TrimSuffix(filepath.Base(s), ".server"), err))
		}
	}
	return total, errors.Join(errs...)
}

// taskCall stands for a task-augmented tools/call (params.task) in
// CheckFrames: its result is a CreateTaskResult, not a CallToolResult.
const taskCall = "tools/call with params.task"

// CheckFrames validates every line the server wrote (server) against the MCP
// schema, each response against the result type of the client request (from
// client) it answers (CreateTaskResult for a task-augmented tools/call), and
// returns how many frames it checked. A result to no request the client
// sent, or a second one to the same request, is an error.
func CheckFrames(v *schemacheck.Validator, client, server []byte) (int, error) {
	methods := map[jsonrpc.ID]string{}
	if err := eachLine(client, func(line []byte) error {
		// Only the ids and methods matter here: a client frame go-sdk cannot
		// decode answers nothing.
		if msg, err := jsonrpc.DecodeMessage(line); err == nil {
			if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
				methods[req.ID] = req.Method
				var p struct {
					Task json.RawMessage `json:"task"`
				}
				if req.Method == "tools/call" && json.Unmarshal(req.Params, &p) == nil && p.Task != nil {
					methods[req.ID] = taskCall
				}
			}
		}
		return nil
	}); err != nil {
		return 0, fmt.Errorf("client frames: %w", err)
	}
	n := 0
	var errs []error
	err := eachLine(server, func(line []byte) error {
		n++
		method := ""
		if msg, err := jsonrpc.DecodeMessage(line); err == nil {
			if resp, ok := msg.(*jsonrpc.Response); ok && resp.Error == nil {
				m, known := methods[resp.ID]
				if !known {
					errs = append(errs, fmt.Errorf("frame %d answers no request the client sent, or one already answered: %s", n, line))
					return nil
				}
				delete(methods, resp.ID)
				method = m
				if m == taskCall {
					method = ""
					if err := v.Def("CreateTaskResult", resp.Result); err != nil {
						errs = append(errs, fmt.Errorf("frame %d: the result of a task-augmented tools/call: %w", n, err))
					}
				}
			}
		}
		if err := v.ServerFrame(line, method); err != nil {
			errs = append(errs, fmt.Errorf("frame %d: %w", n, err))
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("server frames: %w", err)
	}
	return n, errors.Join(errs...)
}

// eachLine calls fn with every non-blank line of data; a last line without its
// newline is a line too (a frame cut short fails the schema check).
func eachLine(data []byte, fn func([]byte) error) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxFrame)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			return err
		}
	}
	return sc.Err()
}
