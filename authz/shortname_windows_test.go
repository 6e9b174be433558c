//go:build windows

package authz_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/openprogram/openprogram/authz"
)

var (
	kernel32             = syscall.NewLazyDLL("kernel32.dll")
	advapi32             = syscall.NewLazyDLL("advapi32.dll")
	procSetFileShortName = kernel32.NewProc("SetFileShortNameW")
	procLookupPrivilege  = advapi32.NewProc("LookupPrivilegeValueW")
	procAdjustPrivileges = advapi32.NewProc("AdjustTokenPrivileges")
)

// setShortName gives the existing directory dir the 8.3 name short, as an
// administrator can (SetFileShortName, with the restore privilege), or
// says why the system would not.
func setShortName(dir, short string) error {
	if err := procSetFileShortName.Find(); err != nil {
		return err
	}
	var tok syscall.Token
	p, _ := syscall.GetCurrentProcess()
	if err := syscall.OpenProcessToken(p, syscall.TOKEN_ADJUST_PRIVILEGES|syscall.TOKEN_QUERY, &tok); err != nil {
		return err
	}
	defer tok.Close()
	priv := struct {
		count uint32
		luid  [2]uint32
		attr  uint32
	}{count: 1, attr: 2} // SE_PRIVILEGE_ENABLED
	name, _ := syscall.UTF16PtrFromString("SeRestorePrivilege")
	if r, _, err := procLookupPrivilege.Call(0, uintptr(unsafe.Pointer(name)), uintptr(unsafe.Pointer(&priv.luid))); r == 0 {
		return err
	}
	if r, _, err := procAdjustPrivileges.Call(uintptr(tok), 0, uintptr(unsafe.Pointer(&priv)), 0, 0, 0); r == 0 {
		return err
	}
	path, _ := syscall.UTF16PtrFromString(dir)
	const fileFlagBackupSemantics = 0x02000000
	h, err := syscall.CreateFile(path, syscall.GENERIC_ALL, syscall.FILE_SHARE_READ|syscall.FILE_SHARE_WRITE|syscall.FILE_SHARE_DELETE,
		nil, syscall.OPEN_EXISTING, fileFlagBackupSemantics, 0)
	if err != nil {
		return err
	}
	defer syscall.CloseHandle(h)
	s, _ := syscall.UTF16PtrFromString(short)
	if r, _, err := procSetFileShortName.Call(uintptr(h), uintptr(unsafe.Pointer(s))); r == 0 {
		return err
	}
	return nil
}

// TestShortNamesWithoutTilde: every existing component counts as the long
// name it stands for, not only one with a "~" (what Windows makes itself):
// an administrator may name a directory's 8.3 alias anything
// (SetFileShortName, a FAT volume written by another system), and
// GITDIR\config must still be .git\config. Under Wine, which sets no short
// names, the row that needs one skips; the case rows show there that every
// component is looked up (ResolvePath gives the names as the disk has them).
func TestShortNamesWithoutTilde(t *testing.T) {
	w, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{".git", "Sub Dir"} {
		if err := os.Mkdir(filepath.Join(w, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ p, want string }{
		{`SUB DIR\x.txt`, `Sub Dir\x.txt`},
		{`.GIT\config`, `.git\config`},
		{`sub dir\..\.Git`, `.git`},
	} {
		if got, err := authz.ResolvePath(w, c.p); err != nil || got != filepath.Join(w, c.want) {
			t.Errorf("ResolvePath(%q) = %q, %v; want %q", c.p, got, err, filepath.Join(w, c.want))
		}
	}
	if err := setShortName(filepath.Join(w, ".git"), "GITDIR"); err != nil {
		t.Logf("row GITDIR skipped: the system set no 8.3 name (%v): a Windows runner with the restore privilege on NTFS checks it", err)
		return
	}
	if _, err := os.Stat(filepath.Join(w, "GITDIR")); err != nil {
		t.Logf("row GITDIR skipped: SetFileShortName reported success and GITDIR does not open (%v): a Windows runner checks it", err)
		return
	}
	got, err := authz.ResolvePath(w, `GITDIR\config`)
	if err != nil || !strings.EqualFold(got, filepath.Join(w, ".git", "config")) {
		t.Errorf(`ResolvePath(GITDIR\config) = %q, %v; want .git\config`, got, err)
	}
	if !authz.IsDangerousPath(got) {
		t.Errorf("IsDangerousPath(%q) = false: .git through its 8.3 alias GITDIR", got)
	}
}
