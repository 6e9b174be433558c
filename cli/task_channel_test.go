package cli

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// A handoff line is read back as it was written; anything but three ids of
// the expected forms, one space between, and a newline is refused.
func TestHandoffLine(t *testing.T) {
	line := handoffLine("0123456789abcdef", "task_ABC234", "RUNNER-234")
	h, err := parseHandoff(line)
	if err != nil || h.client != "0123456789abcdef" || h.task != "task_ABC234" || h.runner != "RUNNER-234" {
		t.Fatalf("parseHandoff(%q) = %+v, %v", line, h, err)
	}
	long := strings.Repeat("a", 65)
	for _, bad := range []string{
		"", "\n", "0123456789abcdef task_1 R1", // no newline
		"0123456789abcdef task_1\n", "0123456789abcdef task_1 R1 extra\n",
		"0123456789abcdef task 1 R1\n", "0123456789abcdef0 task_1 R1\n", "0123456789abcdef ../x R1\n",
		"0123456789abcdef task_1 \n", "0123456789abcdef task_1 ../r\n", " task_1 R1\n",
		"0123456789abcdef " + long + " R1\n", "0123456789abcdef task_1 " + long + "\n",
		"0123456789abcdef task_1 R1\r\n", "0123456789abcdef task_1 R1\n\n",
	} {
		if h, err := parseHandoff([]byte(bad)); !errors.Is(err, errMalformedHandoff) {
			t.Errorf("parseHandoff(%q) = %+v, %v; want errMalformedHandoff", bad, h, err)
		}
	}
}

// readLine reads one line and nothing after it, tells the end of the
// channel from a line cut short, and bounds a line to maxHandoff bytes.
func TestReadLine(t *testing.T) {
	r := bytes.NewReader([]byte(lineEnded + lineStay + "cut"))
	for _, want := range []string{lineEnded, lineStay} {
		if got, err := readLine(r); err != nil || string(got) != want {
			t.Fatalf("readLine = %q, %v; want %q", got, err, want)
		}
	}
	if _, err := readLine(r); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a line cut short: %v, want io.ErrUnexpectedEOF", err)
	}
	if _, err := readLine(r); !errors.Is(err, io.EOF) {
		t.Errorf("the end: %v, want io.EOF", err)
	}
	if _, err := readLine(bytes.NewReader([]byte(strings.Repeat("x", maxHandoff) + "\n"))); err == nil {
		t.Error("a line over maxHandoff bytes was read")
	}
	if got, err := readLine(bytes.NewReader([]byte(strings.Repeat("x", maxHandoff-1) + "\n"))); err != nil || len(got) != maxHandoff {
		t.Errorf("a line of maxHandoff bytes: %d bytes, %v", len(got), err)
	}
}

// A runner's answer to its handoff: "took", or why it runs no turn (one
// line, however long or multi-line the reason), which the serve reads as
// errRunnerDeclined; anything else is another error.
func TestTookAnswer(t *testing.T) {
	if err := tookAnswer([]byte(lineTook), nil); err != nil {
		t.Errorf("took: %v", err)
	}
	why := errors.New("start the task runner: 1 runners of this client still run:\nwaited " + strings.Repeat("long ", 100))
	line := failedLine(why)
	if len(line) > maxHandoff || bytes.Count(line, []byte("\n")) != 1 || !bytes.HasSuffix(line, []byte("\n")) {
		t.Fatalf("failedLine = %q, want one line of at most %d bytes", line, maxHandoff)
	}
	got, err := readLine(bytes.NewReader(line))
	if err != nil {
		t.Fatal(err)
	}
	err = tookAnswer(got, nil)
	if !errors.Is(err, errRunnerDeclined) || !strings.Contains(err.Error(), "1 runners of this client still run: waited long") {
		t.Errorf("the answer of a declining runner: %v", err)
	}
	for _, other := range []string{lineEnded, "took", "TOOK\n"} {
		if err := tookAnswer([]byte(other), nil); err == nil || errors.Is(err, errRunnerDeclined) {
			t.Errorf("tookAnswer(%q) = %v, want another error", other, err)
		}
	}
	if err := tookAnswer(nil, io.EOF); err == nil || errors.Is(err, errRunnerDeclined) {
		t.Errorf("a runner gone: %v, want an error, not errRunnerDeclined", err)
	}
}
