// Package slots bounds how many processes of one kind live at once, across
// every process of a state directory: a process holds a slot, an open file
// of the slot directory with an exclusive lock on it (flock(2) on Unix,
// LockFileEx on Windows), for as long as it lives. The kernel drops the
// lock when the last descriptor of that open file is closed, so a slot is
// freed when its holder exits, however it exits (SIGKILL included), and
// never sooner.
//
// On Unix a process that starts another hands it the slot: the child
// inherits the descriptor (exec.Cmd.ExtraFiles) and the parent closes its
// own copy, so the slot lives exactly as long as the child. Windows passes
// no such file to a child; there a slot is held by the process that took
// it.
package slots

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// DirName is the slot directory in the state directory.
const DirName = "runners"

// poll is how often Acquire tries again while every slot is held.
const poll = 20 * time.Millisecond

// ErrFull: every slot stayed held until the wait ended.
var ErrFull = errors.New("slots: every slot is held")

// Acquire takes one of the n slots named name.0 to name.<n-1> in dir
// (created mode 0700, the slot files 0600), waiting while all are held
// until ctx ends (then an error wrapping [ErrFull]). The returned file holds
// the slot until it, and every copy of its descriptor, is closed.
func Acquire(ctx context.Context, dir, name string, n int) (*os.File, error) {
	if n < 1 {
		return nil, fmt.Errorf("slots: %d slots of %q, want at least 1", n, name)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("slots: create %s: %w", dir, err)
	}
	for {
		for i := range n {
			f, err := try(filepath.Join(dir, name+"."+strconv.Itoa(i)))
			if err != nil {
				return nil, err
			}
			if f != nil {
				return f, nil
			}
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w: %d slots of %s, waited until %w", ErrFull, n, name, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// Held reports how many of the n slots named name in dir are held now.
func Held(dir, name string, n int) (int, error) {
	held := 0
	for i := range n {
		path := filepath.Join(dir, name+"."+strconv.Itoa(i))
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			continue
		}
		f, err := try(path)
		if err != nil {
			return 0, err
		}
		if f == nil {
			held++
			continue
		}
		f.Close()
	}
	return held, nil
}
