package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/builtin/internal/tooldef"
	"github.com/openprogram/openprogram/runtime/tool"
)

// Reason codes the file tools report in Details["reason_code"].
const (
	ReasonNoWorkDir      = "NO_WORKDIR"
	ReasonOutsideWorkDir = "PATH_OUTSIDE_WORKDIRS"
	ReasonBadPath        = "PATH_INVALID"
	ReasonNotFound       = "NOT_FOUND"
	ReasonIsDir          = "IS_DIRECTORY"
	ReasonNotDir         = "NOT_DIRECTORY"
	ReasonBinary         = "BINARY_FILE"
	ReasonTooLarge       = "TOO_LARGE"
	ReasonNoMatch        = "NO_MATCH"
	ReasonAmbiguous      = "AMBIGUOUS_MATCH"
	ReasonBadPattern     = "BAD_PATTERN"
	ReasonBadPatch       = "BAD_PATCH"
	ReasonExists         = "ALREADY_EXISTS"
	ReasonIO             = "IO_ERROR"
)

// Defaults for [Options].
const (
	DefaultMaxOutputBytes = 256 << 10
	DefaultMaxFileBytes   = 10 << 20
	DefaultMaxImageBytes  = 5 << 20
	DefaultMaxResults     = 1000
)

// Options configure the file tools. Zero values mean defaults.
type Options struct {
	// WorkDirs confine every path when the call's tool.CallInfo has none.
	// With neither, every call fails with NO_WORKDIR.
	WorkDirs []string
	// MaxOutputBytes bounds what read, grep, glob and list return
	// (default DefaultMaxOutputBytes).
	MaxOutputBytes int
	// MaxFileBytes is the largest file read, edit, grep and apply_patch
	// handle (default DefaultMaxFileBytes).
	MaxFileBytes int64
	// MaxImageBytes is the largest image read returns (default DefaultMaxImageBytes).
	MaxImageBytes int64
	// MaxResults bounds the entries of glob, grep and list (default DefaultMaxResults).
	MaxResults int
}

type config struct {
	workDirs  []string
	maxOut    int
	maxFile   int64
	maxImage  int64
	maxResult int
}

func newConfig(opts *Options) *config {
	c := &config{maxOut: DefaultMaxOutputBytes, maxFile: DefaultMaxFileBytes, maxImage: DefaultMaxImageBytes, maxResult: DefaultMaxResults}
	if opts == nil {
		return c
	}
	c.workDirs = append([]string(nil), opts.WorkDirs...)
	if opts.MaxOutputBytes > 0 {
		c.maxOut = opts.MaxOutputBytes
	}
	if opts.MaxFileBytes > 0 {
		c.maxFile = opts.MaxFileBytes
	}
	if opts.MaxImageBytes > 0 {
		c.maxImage = opts.MaxImageBytes
	}
	if opts.MaxResults > 0 {
		c.maxResult = opts.MaxResults
	}
	return c
}

// Tools returns the file tools in a fixed order: read, write, edit,
// apply_patch, glob, grep, list. nil opts means defaults.
func Tools(opts *Options) []tool.Tool {
	c := newConfig(opts)
	return []tool.Tool{
		c.readTool(), c.writeTool(), c.editTool(), c.applyPatchTool(),
		c.globTool(), c.grepTool(), c.listTool(),
	}
}

// scope is the confinement of one call: its working directories, the
// first resolved (relative paths and displayed paths use it).
type scope struct {
	dirs []string
	base string // resolved dirs[0]
}

func (c *config) scope(ctx context.Context) (scope, error) {
	dirs := c.workDirs
	if info, ok := tool.CallFrom(ctx); ok && len(info.WorkDirs) > 0 {
		dirs = info.WorkDirs
	}
	if len(dirs) == 0 {
		return scope{}, tooldef.Fail(ReasonNoWorkDir, "no working directory is configured, so file tools cannot run")
	}
	base, err := authz.ResolvePath("", dirs[0])
	if err != nil {
		return scope{}, tooldef.Fail(ReasonNoWorkDir, "working directory %s cannot be resolved: %v", dirs[0], err)
	}
	return scope{dirs: dirs, base: base}, nil
}

// resolve returns p (relative to the first working directory) with
// symlinks resolved, or a failure when it leaves the working directories.
func (s scope) resolve(p string) (string, error) {
	if p == "" {
		p = "."
	}
	r, err := authz.ResolvePath(s.base, p)
	if err != nil {
		return "", tooldef.Fail(ReasonBadPath, "%v", err)
	}
	if !authz.InsideWorkDirs(r, s.dirs) {
		return "", tooldef.Fail(ReasonOutsideWorkDir, "path %s is outside the working directories", p)
	}
	return r, nil
}

// inside reports whether an already resolved path is inside the scope.
func (s scope) inside(resolved string) bool { return authz.InsideWorkDirs(resolved, s.dirs) }

// display shows resolved relative to the first working directory when
// it is inside it, else absolute.
func (s scope) display(resolved string) string {
	if rel, err := filepath.Rel(s.base, resolved); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return filepath.ToSlash(rel)
	}
	return resolved
}

// statFailure maps a stat/open error to a tool failure.
func statFailure(shown string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return tooldef.Fail(ReasonNotFound, "%s does not exist", shown)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return tooldef.Fail(ReasonIO, "%s: %v", shown, err)
}

// isBinary reports whether data (the start of a file) looks binary: a NUL
// byte in the first 8 KiB.
func isBinary(data []byte) bool {
	if len(data) > 8<<10 {
		data = data[:8<<10]
	}
	return bytes.IndexByte(data, 0) >= 0
}

// imageType returns the media type of data by its magic number, or "".
func imageType(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(data, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		return "image/gif"
	case len(data) >= 12 && bytes.Equal(data[:4], []byte("RIFF")) && bytes.Equal(data[8:12], []byte("WEBP")):
		return "image/webp"
	}
	return ""
}

// readTextFile reads a regular text file for editing, enforcing the size
// limit and refusing binary files.
func (c *config) readTextFile(resolved, shown string) ([]byte, fs.FileMode, error) {
	fi, err := os.Stat(resolved)
	if err != nil {
		return nil, 0, statFailure(shown, err)
	}
	if fi.IsDir() {
		return nil, 0, tooldef.Fail(ReasonIsDir, "%s is a directory", shown)
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, tooldef.Fail(ReasonBadPath, "%s is not a regular file", shown)
	}
	if fi.Size() > c.maxFile {
		return nil, 0, tooldef.Fail(ReasonTooLarge, "%s is %d bytes, over the %d byte limit", shown, fi.Size(), c.maxFile)
	}
	data, err := os.ReadFile(resolved)
	if err != nil {
		return nil, 0, statFailure(shown, err)
	}
	if isBinary(data) {
		return nil, 0, tooldef.Fail(ReasonBinary, "%s is a binary file", shown)
	}
	return data, fi.Mode().Perm(), nil
}

// stage writes data to a new temporary file next to target and returns
// its name; the caller renames it into place or removes it.
func stage(target string, data []byte, perm fs.FileMode) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".tmp-*")
	if err != nil {
		return "", err
	}
	name := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(name)
		return "", err
	}
	return name, nil
}

// writeAtomic replaces target with data through a temporary file and a
// rename, so readers see the old or the new content, never a mix.
func writeAtomic(target string, data []byte, perm fs.FileMode) error {
	tmp, err := stage(target, data, perm)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, target); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
