package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The lines `mcp serve` (taskSpawner) and a task runner (mcpRunTaskCmd)
// exchange on the runner's private channel, the same on every system; only
// the channel and how the runner comes to hold its runner slots differ
// (task_standby_unix.go: a Unix socket pair, the slots passed with the
// handoff; task_standby_windows.go: the runner's stdin and stdout, the
// runner takes its own slots):
//
//	serve → runner  "<client id> <task id> <runner>\n"  the handoff
//	runner → serve  "took\n" or "failed <why>\n"        Windows: the runner holds its slots, or runs no turn
//	runner → serve  "ended\n"                           the task ended (once per task)
//	serve → runner  "stay\n"                            it is the standby now; otherwise the channel ends
const (
	lineEnded = "ended\n"
	lineStay  = "stay\n"
	lineTook  = "took\n"
	// linePrefixFailed starts the answer of a runner that runs no turn.
	linePrefixFailed = "failed "
)

// maxHandoff bounds every line: a client id, a task id and a runner,
// spaces between, and a newline.
const maxHandoff = 256

// errMalformedHandoff: a handoff line that is not "<client id> <task id>
// <runner>\n" of the expected forms.
var errMalformedHandoff = errors.New("a malformed handoff")

// errRunnerDeclined: the runner was handed the task and answered that it
// runs no turn of it (no runner slot freed in time, or its host did not
// open); another runner would do no better.
var errRunnerDeclined = errors.New("the runner runs no turn of the task")

// handoffLine is the line that hands task taskID of clientID, claimed for
// runner, to a runner.
func handoffLine(clientID, taskID, runner string) []byte {
	return []byte(clientID + " " + taskID + " " + runner + "\n")
}

// parseHandoff reads a handoff line (its newline included): a client id
// of 1 to 16 and a task id and a runner of 1 to 64 bytes of
// [A-Za-z0-9_-], a space between each. Anything else is
// errMalformedHandoff.
func parseHandoff(line []byte) (h handoff, err error) {
	body, ok := bytes.CutSuffix(line, []byte("\n"))
	client, rest, ok1 := bytes.Cut(body, []byte(" "))
	task, runner, ok2 := bytes.Cut(rest, []byte(" "))
	if !ok || !ok1 || !ok2 || len(line) > maxHandoff || !handoffID(client, 16) || !handoffID(task, 64) || !handoffID(runner, 64) {
		return handoff{}, errMalformedHandoff
	}
	return handoff{client: string(client), task: string(task), runner: string(runner)}, nil
}

// handoffID reports whether b is 1 to max bytes of [A-Za-z0-9_-].
func handoffID(b []byte, max int) bool {
	if len(b) == 0 || len(b) > max {
		return false
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// readLine reads one line, its newline included, of at most maxHandoff
// bytes, and nothing after it. io.EOF: the channel ended before the line
// began; io.ErrUnexpectedEOF: within it.
func readLine(r io.ByteReader) ([]byte, error) {
	var line []byte
	for len(line) < maxHandoff {
		c, err := r.ReadByte()
		if err != nil {
			if len(line) > 0 && errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		line = append(line, c)
		if c == '\n' {
			return line, nil
		}
	}
	return nil, errors.New("a line of the task runner's channel is too long")
}

// failedLine is the answer of a runner that runs no turn of the task it
// was handed: why, on one line, cut to fit maxHandoff.
func failedLine(why error) []byte {
	text := strings.Join(strings.Fields(why.Error()), " ")
	if max := maxHandoff - len(linePrefixFailed) - 1; len(text) > max {
		text = text[:max]
	}
	return []byte(linePrefixFailed + text + "\n")
}

// tookAnswer reads a runner's answer to its handoff: nil for "took", the
// runner's reason for "failed <why>", an error for anything else.
func tookAnswer(line []byte, err error) error {
	switch {
	case err != nil:
		return fmt.Errorf("the runner answered nothing: %w", err)
	case string(line) == lineTook:
		return nil
	case bytes.HasPrefix(line, []byte(linePrefixFailed)):
		return fmt.Errorf("%w: %s", errRunnerDeclined, bytes.TrimSuffix(line[len(linePrefixFailed):], []byte("\n")))
	default:
		return fmt.Errorf("the runner answered %q, not %q", line, lineTook)
	}
}
