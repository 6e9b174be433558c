//go:build windows

package clients

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/windows"
)

// holdOpen opens path the way a client that keeps its file open may: with
// read and write sharing but not delete sharing, so Windows refuses to
// rename another file over it until the handle closes.
func holdOpen(t *testing.T, path string) windows.Handle {
	t.Helper()
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := windows.CreateFile(p, windows.GENERIC_READ, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE, nil,
		windows.OPEN_EXISTING, windows.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestReplaceWaitsForClient: while a client holds its file open the
// replace is retried, and it lands once the client lets go.
func TestReplaceWaitsForClient(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte("old\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := holdOpen(t, path)
	retried := 0
	replaceRetried = func(attempt int) {
		retried = attempt
		if attempt == 2 {
			windows.CloseHandle(h)
		}
	}
	defer func() { replaceRetried = nil }()
	if err := replaceFile(path, []byte("new\r\n")); err != nil {
		t.Fatalf("replaceFile after the client let go = %v", err)
	}
	if retried != 2 {
		t.Errorf("replaceFile retried %d times, want 2 (the file was held for two attempts)", retried)
	}
	if got, _ := os.ReadFile(path); string(got) != "new\r\n" {
		t.Errorf("file = %q, want the new content", got)
	}
}

// TestReplaceGivesUp: a client that never lets go gets a bounded number of
// tries, then an error that says what to do; the file is as it was and no
// temporary file is left beside it.
func TestReplaceGivesUp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := holdOpen(t, path)
	defer windows.CloseHandle(h)
	tries := 0
	replaceRetried = func(attempt int) { tries = attempt }
	defer func() { replaceRetried = nil }()
	err := replaceFile(path, []byte("new"))
	if err == nil || !strings.Contains(err.Error(), "quit it and run this again") {
		t.Fatalf("replaceFile on a held file = %v, want the quit-the-client error", err)
	}
	if tries != replaceAttempts {
		t.Errorf("replaceFile tried %d times, want %d", tries, replaceAttempts)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Errorf("file = %q, want it unchanged", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("dir holds %d entries, want the file alone", len(entries))
	}
}
