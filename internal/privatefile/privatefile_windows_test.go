//go:build windows

package privatefile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/windows"

	"github.com/openprogram/openprogram/internal/privatefile"
	"github.com/openprogram/openprogram/internal/shell"
	"github.com/openprogram/openprogram/internal/wine"
)

func TestWindowsCreatedFilesAreOwnerOnly(t *testing.T) {
	if wine.Detected() {
		t.Skip("Wine keeps no DACLs (it reads every file back as open to everyone): a real Windows runner checks this")
	}
	dir := t.TempDir()
	for name, create := range map[string]func(string) error{
		"CreateNew": func(p string) error { return privatefile.CreateNew(p, []byte("secret")) },
		"Replace":   func(p string) error { return privatefile.Replace(p, []byte("secret")) },
		"Mkdir":     privatefile.Mkdir,
	} {
		p := filepath.Join(dir, name)
		if err := create(p); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := privatefile.CheckPrivate(f); err != nil {
			t.Errorf("%s made %s, which is not owner-only: %v", name, p, err)
		}
		f.Close()
	}
	// A file made by os.WriteFile inherits the temp directory's DACL.
	open := filepath.Join(dir, "inherited")
	if err := os.WriteFile(open, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	was, changed, err := privatefile.Restrict(open)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Restrict on an inherited DACL: was %04o, changed %v", was, changed)
	f, err := os.Open(open)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := privatefile.CheckPrivate(f); err != nil {
		t.Errorf("after Restrict: %v", err)
	}
}

func TestWindowsNeverThroughAReparsePoint(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("cannot make a symlink here: %v", err)
	}
	if _, err := os.Lstat(link); err != nil && wine.Detected() {
		t.Skip("Wine 8's CreateSymbolicLink reports success and makes nothing: a real Windows runner checks this")
	}
	if f, err := privatefile.OpenNoFollow(link); err == nil {
		f.Close()
		t.Errorf("OpenNoFollow(%s) opened a symlink", link)
	} else if !errors.Is(err, privatefile.ErrReparsePoint) {
		t.Logf("OpenNoFollow(symlink): %v (not ErrReparsePoint)", err)
	}
	if err := privatefile.CreateNew(link, []byte("y")); err == nil {
		t.Errorf("CreateNew(%s) wrote through a symlink", link)
	}
	if data, _ := os.ReadFile(target); string(data) != "x" {
		t.Errorf("the symlink's target now holds %q", data)
	}
	if err := privatefile.CreateNew(target, []byte("y")); err == nil {
		t.Errorf("CreateNew replaced an existing file")
	}
}

// The command that makes a file owner-only names the user by SID, which
// icacls reads the same in PowerShell and cmd: %USERNAME% is expanded by
// cmd alone, and PowerShell, where the printed fixes are pasted, would hand
// icacls the literal text.
func TestRestrictCommandNamesTheUserBySID(t *testing.T) {
	tu, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		t.Fatal(err)
	}
	cmd := privatefile.RestrictCommand(`C:\Users\ann\.openprogram\mcp_token`)
	if strings.Contains(cmd, "%") {
		t.Errorf("RestrictCommand = %s: it holds a cmd variable, which PowerShell does not expand", cmd)
	}
	if want := `/grant:r "*` + tu.User.Sid.String() + `:F"`; !strings.Contains(cmd, want) {
		t.Errorf("RestrictCommand = %s, want it to grant the user by SID: %s", cmd, want)
	}
}

// The command that makes a file owner-only is pasted into PowerShell: the
// path is one literal word there, whatever it holds ($ and a backtick
// expand inside double quotes, and would name another file).
func TestRestrictCommandQuotesThePathForPowerShell(t *testing.T) {
	for _, path := range []string{`C:\Users\ann\.openprogram\mcp_token`, `C:\Users\John Smith\.openprogram`, `C:\w\$HOME\a`, "C:\\w\\`$x\\a", `C:\w\it's\a`} {
		cmd := privatefile.RestrictCommand(path)
		if want := "icacls " + shell.PowerShell.Quote(path) + " "; !strings.HasPrefix(cmd, want) {
			t.Errorf("RestrictCommand(%s) = %s, want it to start %s", path, cmd, want)
		}
	}
}
