//go:build windows

package privatefile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/openprogram/openprogram/internal/shell"
	"github.com/openprogram/openprogram/internal/wine"
)

// ErrReparsePoint is wrapped by the errors of [OpenNoFollow] and [Restrict]
// for a path whose last element is a symlink, a junction or another reparse
// point: it is refused, never followed.
var ErrReparsePoint = errors.New("is a symlink or another reparse point")

// user is the current user's SID, read once from the process token.
var user = sync.OnceValues(func() (*windows.SID, error) {
	tu, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return nil, fmt.Errorf("read the current user's SID: %w", err)
	}
	return tu.User.Sid.Copy()
})

// ownerOnly returns a security descriptor owned by the current user whose
// protected DACL grants full control to that user and to SYSTEM, nothing to
// anyone else, and inherits nothing.
func ownerOnly() (*windows.SECURITY_DESCRIPTOR, error) {
	sid, err := user()
	if err != nil {
		return nil, err
	}
	s := sid.String()
	return windows.SecurityDescriptorFromString("O:" + s + "D:P(A;;FA;;;" + s + ")(A;;FA;;;SY)")
}

func securityAttributes() (*windows.SecurityAttributes, error) {
	sd, err := ownerOnly()
	if err != nil {
		return nil, err
	}
	return &windows.SecurityAttributes{Length: uint32(unsafe.Sizeof(windows.SecurityAttributes{})), SecurityDescriptor: sd}, nil
}

// Create creates a new file at path for writing with an owner-only DACL.
// It fails when anything, a symlink or junction included, is at path
// already (CREATE_NEW never follows a reparse point).
func Create(path string) (*os.File, error) {
	sa, err := securityAttributes()
	if err != nil {
		return nil, &fs.PathError{Op: "create", Path: path, Err: err}
	}
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, &fs.PathError{Op: "create", Path: path, Err: err}
	}
	h, err := windows.CreateFile(p, windows.GENERIC_READ|windows.GENERIC_WRITE,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, sa,
		windows.CREATE_NEW, windows.FILE_ATTRIBUTE_NORMAL|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "create", Path: path, Err: err}
	}
	return os.NewFile(uintptr(h), path), nil
}

// Mkdir creates the directory path with an owner-only DACL. Like
// [os.Mkdir], it fails when anything is at path already.
func Mkdir(path string) error {
	sa, err := securityAttributes()
	if err != nil {
		return &fs.PathError{Op: "mkdir", Path: path, Err: err}
	}
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return &fs.PathError{Op: "mkdir", Path: path, Err: err}
	}
	if err := windows.CreateDirectory(p, sa); err != nil {
		return &fs.PathError{Op: "mkdir", Path: path, Err: err}
	}
	return nil
}

// createTemp creates an owner-only file named prefix + random + suffix in dir.
func createTemp(dir, prefix, suffix string) (*os.File, error) {
	for range 100 {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		f, err := Create(filepath.Join(dir, prefix+hex.EncodeToString(b[:])+suffix))
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("create a temporary file in %s: too many names taken", dir)
}

// open opens path with access, never following a reparse point at its last
// element: one there is refused with [ErrReparsePoint].
func open(path string, access uint32) (*os.File, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	h, err := windows.CreateFile(p, access,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil,
		windows.OPEN_EXISTING, windows.FILE_FLAG_OPEN_REPARSE_POINT|windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		windows.CloseHandle(h)
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	if info.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0 {
		windows.CloseHandle(h)
		return nil, &fs.PathError{Op: "open", Path: path, Err: ErrReparsePoint}
	}
	return os.NewFile(uintptr(h), path), nil
}

// OpenNoFollow opens path for reading without following a symlink,
// junction or other reparse point at its last element: one there is
// refused with an error wrapping [ErrReparsePoint].
func OpenNoFollow(path string) (*os.File, error) {
	return open(path, windows.GENERIC_READ)
}

func openAppend(path string) (*os.File, error) {
	f, err := Create(path)
	if errors.Is(err, fs.ErrExist) {
		return os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	}
	return f, err
}

// ACLsEnforced reports whether the system keeps and enforces file DACLs.
// Wine keeps none: it reads
// every file back as open to everyone, so there [CheckPrivate] has nothing
// to check and passes; the Unix mode bits of the files Wine maps are what
// protects them there.
func ACLsEnforced() bool { return !wine.Detected() }

// readOthers is the access an ACE must not grant to anyone but the user and
// SYSTEM: reading or changing the contents, or the DACL and owner.
const readOthers = windows.FILE_READ_DATA | windows.FILE_WRITE_DATA | windows.FILE_APPEND_DATA |
	windows.GENERIC_READ | windows.GENERIC_WRITE | windows.GENERIC_ALL |
	windows.WRITE_DAC | windows.WRITE_OWNER

// CheckPrivate returns an error when the open file (or directory) f is
// not owned by the current user or its DACL lets anyone but that user and
// SYSTEM read or change it (a missing DACL lets everyone).
func CheckPrivate(f *os.File) error {
	if !ACLsEnforced() {
		return nil
	}
	sd, err := windows.GetSecurityInfo(windows.Handle(f.Fd()), windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return fmt.Errorf("read the security descriptor: %w", err)
	}
	return checkDescriptor(sd)
}

func checkDescriptor(sd *windows.SECURITY_DESCRIPTOR) error {
	me, err := user()
	if err != nil {
		return err
	}
	owner, _, err := sd.Owner()
	if err != nil {
		return fmt.Errorf("read the owner: %w", err)
	}
	if owner == nil || !owner.Equals(me) {
		return fmt.Errorf("owned by %s, not by the current user %s", owner, me)
	}
	dacl, _, err := sd.DACL()
	if err != nil || dacl == nil {
		return errors.New("has no DACL, which grants access to everyone")
	}
	system, err := windows.CreateWellKnownSid(windows.WinLocalSystemSid)
	if err != nil {
		return err
	}
	for i := range uint32(dacl.AceCount) {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &ace); err != nil {
			return fmt.Errorf("read the DACL: %w", err)
		}
		if ace.Header.AceType != windows.ACCESS_ALLOWED_ACE_TYPE || ace.Header.AceFlags&windows.INHERIT_ONLY_ACE != 0 {
			continue
		}
		sid := (*windows.SID)(unsafe.Pointer(&ace.SidStart))
		if ace.Mask&readOthers != 0 && !sid.Equals(me) && !sid.Equals(system) {
			return fmt.Errorf("its DACL grants access to %s", sid)
		}
	}
	return nil
}

// RestrictCommand is the command that makes the file at path owner-only,
// for PowerShell, where the printed fixes are pasted: the path is quoted
// as one literal word (inside double quotes $ and a backtick would expand
// and name another file). It names the user by SID (*S-1-5-…);
// $env:USERNAME is the fallback when the SID cannot be read.
func RestrictCommand(path string) string {
	who := "${env:USERNAME}"
	if sid, err := user(); err == nil {
		who = "*" + sid.String()
	}
	return `icacls ` + shell.Native.Quote(path) + ` /inheritance:r /grant:r "` + who + `:F" /grant:r "SYSTEM:F" /remove:g Everyone Users "Authenticated Users"`
}

// syncDir: see [SyncDir].
func syncDir(string) {}

// Restrict gives the regular file at path the owner-only DACL when its
// DACL lets anyone else in (a file this program wrote, saved again by
// another program). It returns 0o666 or [Mode] for what the file allowed
// before, and whether it changed it. A reparse point at path is refused.
func Restrict(path string) (was fs.FileMode, changed bool, err error) {
	f, err := open(path, windows.READ_CONTROL|windows.WRITE_DAC|windows.WRITE_OWNER|windows.FILE_READ_ATTRIBUTES)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, false, err
	}
	if !fi.Mode().IsRegular() {
		return 0, false, fmt.Errorf("%s is not a regular file", path)
	}
	if CheckPrivate(f) == nil {
		return Mode, false, nil
	}
	sd, err := ownerOnly()
	if err != nil {
		return 0o666, false, err
	}
	owner, _, err := sd.Owner()
	if err != nil {
		return 0o666, false, err
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return 0o666, false, err
	}
	if err := windows.SetSecurityInfo(windows.Handle(f.Fd()), windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION,
		owner, nil, dacl, nil); err != nil {
		return 0o666, false, fmt.Errorf("make %s owner-only: %w", path, err)
	}
	return 0o666, true, nil
}

// MkdirAll creates path and its missing parents, each with an owner-only
// DACL ([Mkdir]); the directories already there are left as they are.
func MkdirAll(path string) error {
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return nil
		}
		return &fs.PathError{Op: "mkdir", Path: path, Err: windows.ERROR_ALREADY_EXISTS}
	}
	if parent := filepath.Dir(path); parent != path {
		if err := MkdirAll(parent); err != nil {
			return err
		}
	}
	if err := Mkdir(path); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// SyncDir does nothing on Windows, which has no directory fsync: a link or
// rename is durable once it returns.
func SyncDir(string) error { return nil }

// renameAttempts bounds how often RenameOver tries while another program
// holds the target open; renameWait is the pause after the first failed
// try, doubling after each: about 6.4 s in all. This is the one retry of a
// replace in the repository: this program's own readers hold a secret file
// for the length of one read, a running MCP client may hold its
// configuration file a little longer.
const (
	renameAttempts = 8
	renameWait     = 50 * time.Millisecond
)

// renameRetried, when set (by tests), is called after each rename attempt
// that failed because the target was in use.
var renameRetried func(attempt int)

// RenameOver renames oldpath over newpath atomically. Windows refuses to
// rename over a file another handle holds open, even a handle that shares
// delete access (another process reading the pins or the anchor): while
// the target is in use, RenameOver tries again a bounded number of times,
// then returns the last error wrapping [ErrInUse], both files as they
// were. A target that cannot be replaced for good (a directory, a
// read-only file, one the DACL keeps from the user) fails at the first try
// with an error that says what to do.
func RenameOver(oldpath, newpath string) error {
	wait := renameWait
	for attempt := 1; ; attempt++ {
		err := os.Rename(oldpath, newpath)
		if err == nil || !refused(err) {
			return err
		}
		if why := deniedForGood(newpath); why != "" {
			return fmt.Errorf("%w: %s", err, why)
		}
		if attempt == renameAttempts {
			return fmt.Errorf("%w: %w", err, ErrInUse)
		}
		if renameRetried != nil {
			renameRetried(attempt)
		}
		time.Sleep(wait)
		wait *= 2
	}
}

// refused reports whether err is Windows refusing a rename over a file:
// a sharing or lock violation, which another handle causes, or access
// denied, which either another handle or the file itself causes.
func refused(err error) bool {
	return errors.Is(err, windows.ERROR_SHARING_VIOLATION) || errors.Is(err, windows.ERROR_ACCESS_DENIED) ||
		errors.Is(err, windows.ERROR_LOCK_VIOLATION)
}

// deniedForGood tells, after a rename over path was refused, whether the
// target itself forbids it, whoever holds it open: it returns what to do
// about it, or "" when only a handle another program holds stands in the
// way (or nothing more can be told), which is worth a retry.
func deniedForGood(path string) string {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return ""
	}
	attrs, err := windows.GetFileAttributes(p)
	switch {
	case err != nil:
		return ""
	case attrs&windows.FILE_ATTRIBUTE_DIRECTORY != 0:
		return "the path is a directory; move it away and run this again"
	case attrs&windows.FILE_ATTRIBUTE_READONLY != 0:
		return "the file is read-only; clear that with attrib -r " + shell.Native.Quote(path) + " and run this again"
	}
	// Delete access is what a rename over the file needs: a DACL that
	// denies it refuses the open too, a handle without delete sharing makes
	// it a sharing violation, and a handle that shares delete lets it open.
	h, err := windows.CreateFile(p, windows.DELETE,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil,
		windows.OPEN_EXISTING, windows.FILE_FLAG_OPEN_REPARSE_POINT|windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if errors.Is(err, windows.ERROR_ACCESS_DENIED) {
		return "this user may not replace the file; make it the user's own with " + RestrictCommand(path) + " and run this again"
	}
	if err == nil {
		windows.CloseHandle(h)
	}
	return ""
}
