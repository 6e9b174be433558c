package sqlite

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/openprogram/openprogram/sessions"
)

// The test binary re-executes itself as a helper process (another
// OpenProgram process on the same file) when helperEnv names a mode.
const (
	helperEnv     = "OPENPROGRAM_SQLITE_TEST_HELPER"
	helperPathEnv = "OPENPROGRAM_SQLITE_TEST_PATH"
	helperLenEnv  = "OPENPROGRAM_SQLITE_TEST_CHAIN"
)

// runHelper runs a helper mode and returns the process exit code.
//
//   - "open": open the store (migrating it) and exit.
//   - "turn": append chains of $CHAIN messages under the head of session
//     "s", moving the head, forever; prints "started" once, "committed <id>"
//     after each commit.
//   - "turn-hold": like turn, but stops inside the first turn's transaction
//     (messages inserted, head not moved) after printing "in-tx", and waits
//     to be killed.
func runHelper(mode string) int {
	ctx := context.Background()
	st, err := Open(ctx, os.Getenv(helperPathEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper open:", err)
		return 1
	}
	if mode == "open" {
		if err := st.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "helper close:", err)
			return 1
		}
		return 0
	}
	n, _ := strconv.Atoi(os.Getenv(helperLenEnv))
	if mode == "turn-hold" {
		testHookInTurn = func() {
			fmt.Println("in-tx")
			select {} // hold the transaction open until SIGKILL
		}
	}
	fmt.Println("started")
	for round := 0; ; round++ {
		sess, err := st.GetSession(ctx, "s")
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 1
		}
		msgs := make([]sessions.NewMessage, n)
		for i := range msgs {
			msgs[i] = sessions.NewMessage{Role: sessions.RoleAssistant, Content: fmt.Sprintf("chain %d/%d of %d", i+1, n, round)}
		}
		got, err := st.AppendMessages(ctx, "s", sess.HeadID, msgs, true)
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper append:", err)
			return 1
		}
		fmt.Println("committed", got[n-1].ID)
	}
}

// helper starts the test binary in helper mode on the store at path and
// returns its stdout lines. Lines beyond the channel's buffer are dropped so
// the helper never blocks on its output.
func helper(t *testing.T, mode, path string, chain int) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperPathEnv+"="+path, helperLenEnv+"="+strconv.Itoa(chain))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start helper %s: %v", mode, err)
	}
	lines := make(chan string, 1024)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-drained
		_ = cmd.Wait()
	})
	return cmd, lines
}

// expectLine waits for the helper to print want.
func expectLine(t *testing.T, lines <-chan string, want string) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("helper exited before printing %q", want)
			}
			if l == want {
				return
			}
		case <-timeout:
			t.Fatalf("helper did not print %q within 60s", want)
		}
	}
}

// kill SIGKILLs the helper and reaps it.
func kill(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill helper: %v", err)
	}
}
