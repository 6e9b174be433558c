// Package taskrules holds what the store backends share about durable
// tasks ([sessions.TaskStore]): input checks, page cursors and the reasons
// a compare-and-set on a task row changed nothing, so that SQLite and
// PostgreSQL refuse the same inputs with the same errors.
package taskrules

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openprogram/openprogram/sessions"
)

// CheckNew checks a task to create.
func CheckNew(t sessions.NewTask) error {
	op := fmt.Sprintf("create task %q", t.ID)
	if err := sessions.CheckText("task id", t.ID, "task client id", t.ClientID); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := checkUTF8(op, "task id", t.ID, "task client id", t.ClientID); err != nil {
		return err
	}
	switch {
	case t.ID == "":
		return errors.New("create task: empty id; the caller chooses a random task id")
	case t.ClientID == "":
		return fmt.Errorf("%s: empty client id; every task belongs to a client identity", op)
	case t.TTL <= 0:
		return fmt.Errorf("%s: ttl %v, want a positive duration", op, t.TTL)
	case len(t.Request) == 0:
		return fmt.Errorf("%s: empty request; the task needs what its runner runs", op)
	}
	if t.Runner != "" {
		if err := CheckLease(op, t.ID, t.Runner, t.Lease); err != nil {
			return err
		}
	}
	if err := CheckJSON("task request", t.Request); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// CheckJSON checks one of a task's JSON documents (nil passes): at most
// sessions.MaxTaskPayload bytes, no U+0000, valid UTF-8 and valid JSON.
func CheckJSON(field string, b json.RawMessage) error {
	if b == nil {
		return nil
	}
	if len(b) > sessions.MaxTaskPayload {
		return fmt.Errorf("%w: %s is %d bytes, the maximum is %d", sessions.ErrTaskTooLarge, field, len(b), sessions.MaxTaskPayload)
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return fmt.Errorf("%w: %s", sessions.ErrInvalidText, field)
	}
	if !utf8.Valid(b) || !json.Valid(b) {
		return fmt.Errorf("%s is not valid UTF-8 JSON", field)
	}
	return nil
}

// CheckLease checks a runner lease request on task id.
func CheckLease(op, id, runner string, ttl time.Duration) error {
	if err := CheckRunner(op, id, runner); err != nil {
		return err
	}
	if ttl <= 0 {
		return fmt.Errorf("%s: ttl %v, want a positive duration", op, ttl)
	}
	return nil
}

// CheckRunner checks the task id and runner of a runner's write.
func CheckRunner(op, id, runner string) error {
	if err := sessions.CheckText("task id", id, "task runner", runner); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := checkUTF8(op, "task id", id, "task runner", runner); err != nil {
		return err
	}
	if runner == "" {
		return fmt.Errorf("%s: empty runner", op)
	}
	return nil
}

// checkUTF8 refuses, as PostgreSQL text would, fields (name, value pairs)
// that are not valid UTF-8, so both backends refuse the same inputs.
func checkUTF8(op string, fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if !utf8.ValidString(fields[i+1]) {
			return fmt.Errorf("%s: %s is not valid UTF-8", op, fields[i])
		}
	}
	return nil
}

// Unstorable reports whether any of ss is a text no task row holds (U+0000
// or invalid UTF-8): a lookup by it finds nothing, without asking the
// database.
func Unstorable(ss ...string) bool {
	for _, s := range ss {
		if sessions.HasNUL(s) || !utf8.ValidString(s) {
			return true
		}
	}
	return false
}

// CheckFinish checks the status, message and result of a FinishTask.
func CheckFinish(op, status, message string, result json.RawMessage) error {
	switch status {
	case sessions.TaskCompleted, sessions.TaskFailed, sessions.TaskCancelled:
	default:
		return fmt.Errorf("%s: status %q, want %s, %s or %s", op, status, sessions.TaskCompleted, sessions.TaskFailed, sessions.TaskCancelled)
	}
	return CheckOutcome(op, message, result)
}

// CheckOutcome checks the status message and result a task ends with.
func CheckOutcome(op, message string, result json.RawMessage) error {
	if err := sessions.CheckText("task status message", message); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if len(message) > sessions.MaxTaskMessage {
		return fmt.Errorf("%s: %w: the status message is %d bytes, the maximum is %d", op, sessions.ErrTaskTooLarge, len(message), sessions.MaxTaskMessage)
	}
	if !utf8.ValidString(message) {
		return fmt.Errorf("%s: the status message is not valid UTF-8", op)
	}
	if err := CheckJSON("task result", result); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// Limit is the page size ListTasks uses for limit.
func Limit(limit int) int {
	switch {
	case limit <= 0:
		return sessions.DefaultTaskPage
	case limit > sessions.MaxTaskPage:
		return sessions.MaxTaskPage
	}
	return limit
}

// cursorPrefix versions the cursor format.
const cursorPrefix = "t1."

// EncodeCursor is the opaque cursor of the page after the task created at
// created (microsecond precision) with id.
func EncodeCursor(created time.Time, id string) string {
	raw := strconv.FormatInt(created.UnixMicro(), 10) + "." + id
	return cursorPrefix + base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// DecodeCursor undoes EncodeCursor; anything else is
// sessions.ErrInvalidCursor.
func DecodeCursor(cursor string) (time.Time, string, error) {
	bad := func() (time.Time, string, error) {
		return time.Time{}, "", fmt.Errorf("list tasks: %w: pass the next cursor of a previous page, or none for the first", sessions.ErrInvalidCursor)
	}
	rest, ok := strings.CutPrefix(cursor, cursorPrefix)
	if !ok || len(rest) > 2048 {
		return bad()
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return bad()
	}
	num, id, ok := strings.Cut(string(raw), ".")
	micros, err := strconv.ParseInt(num, 10, 64)
	if !ok || err != nil || id == "" || sessions.HasNUL(id) || !utf8.ValidString(id) {
		return bad()
	}
	return time.UnixMicro(micros).UTC(), id, nil
}

// Refusal says why a runner's compare-and-set on task t (found: the task
// exists and is visible) changed nothing, wrapping op: ErrNotFound,
// ErrTaskDone (the task is terminal, or committing and committing
// refuses), ErrLeaseLost (runner does not hold the lease, or, with
// needLive, its lease lapsed at now). nil: nothing explains it (the row
// changed meanwhile; the caller tries again).
func Refusal(op string, t sessions.Task, found bool, runner string, committingRefuses, needLive bool, now time.Time) error {
	switch {
	case !found:
		return fmt.Errorf("%s: %w", op, sessions.ErrNotFound)
	case t.Status != sessions.TaskWorking:
		return fmt.Errorf("%s: the task is %s: %w", op, t.Status, sessions.ErrTaskDone)
	case t.Runner != runner:
		return fmt.Errorf("%s for runner %q: %w", op, runner, sessions.ErrLeaseLost)
	case committingRefuses && t.Committing:
		return fmt.Errorf("%s: the task is committing: %w", op, sessions.ErrTaskDone)
	case needLive && !t.RunnerExpiresAt.After(now):
		return fmt.Errorf("%s for runner %q: the lease lapsed: %w", op, runner, sessions.ErrLeaseLost)
	}
	return nil
}
