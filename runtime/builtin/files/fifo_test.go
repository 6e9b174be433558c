//go:build unix

package files_test

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/openprogram/openprogram/runtime/builtin/files"
	"github.com/openprogram/openprogram/runtime/tool"
)

// A FIFO with no writer must not hang read: open(2) on it would block in the
// kernel, where no context reaches.
func TestReadFIFODoesNotBlock(t *testing.T) {
	e := newEnv(t, nil)
	if err := syscall.Mkfifo(filepath.Join(e.work, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan tool.Result, 1)
	go func() { done <- e.call("read", map[string]any{"path": "pipe"}) }()
	select {
	case res := <-done:
		wantErr(t, res, files.ReasonBadPath)
	case <-time.After(10 * time.Second):
		t.Fatal("read of a FIFO is still blocked after 10s")
	}
}
