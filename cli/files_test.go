package cli_test

import (
	"os"
	"path/filepath"
	"testing"
)

// putFile writes a client's file at path, its directories first, with
// exactly mode perm (whatever the umask).
func putFile(t *testing.T, path, content string, perm os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
}
