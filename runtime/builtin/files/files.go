package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/builtin/internal/tooldef"
	"github.com/openprogram/openprogram/runtime/tool"
)

// Reason codes the file tools report in tool.Result.Reason.
const (
	ReasonNoWorkDir      = "NO_WORKDIR"
	ReasonOutsideWorkDir = "PATH_OUTSIDE_WORKDIRS"
	ReasonProtected      = "PATH_PROTECTED"
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
	// WorkDirs confine every path when the call's tool.CallInfo carries no
	// speaker (else the speaker's do). With none, every call fails with
	// NO_WORKDIR.
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
	// StateDir is the state directory when the call's tool.CallInfo
	// carries no speaker. Writes by every speaker are refused inside it wherever it is.
	// Empty (in both): only its default names (.openprogram,
	// .openprogram-<profile>) are protected, as dangerous directories.
	StateDir string
	// Logger receives, at debug level, the full resolution behind a
	// refused path, which results never show. Nil discards.
	Logger *slog.Logger
}

type config struct {
	workDirs  []string
	maxOut    int
	maxFile   int64
	maxImage  int64
	maxResult int
	stateDir  string
	log       *slog.Logger
}

func newConfig(opts *Options) *config {
	c := &config{maxOut: DefaultMaxOutputBytes, maxFile: DefaultMaxFileBytes, maxImage: DefaultMaxImageBytes, maxResult: DefaultMaxResults,
		log: slog.New(slog.DiscardHandler)}
	if opts == nil {
		return c
	}
	c.workDirs = append([]string(nil), opts.WorkDirs...)
	c.stateDir = opts.StateDir
	if opts.Logger != nil {
		c.log = opts.Logger
	}
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

// scope is the confinement of one call: the call's speaker, whole (its
// working directories, source, rules and state directory), or without one
// the tools' own directories under a constrained caller's rules; and the
// first working directory resolved (relative paths and displayed paths use
// it).
type scope struct {
	sp       authz.Speaker // zero: no speaker, the tools' own directories
	workDirs []string
	stateDir string
	base     string // resolved workDirs[0]
	log      *slog.Logger
}

func (c *config) scope(ctx context.Context) (scope, error) {
	s := scope{workDirs: c.workDirs, stateDir: c.stateDir, log: c.log}
	if info, _ := tool.CallFrom(ctx); info.Speaker.Valid() {
		s.sp, s.workDirs, s.stateDir = info.Speaker, info.Speaker.WorkDirs(), info.Speaker.StateDir()
	}
	if len(s.workDirs) == 0 {
		return scope{}, tooldef.Fail(ReasonNoWorkDir, "no working directory is configured, so file tools cannot run")
	}
	base, err := authz.ResolvePath("", s.workDirs[0])
	if err != nil {
		c.log.Debug("working directory cannot be resolved", "resolution", err.Error())
		return scope{}, tooldef.Fail(ReasonNoWorkDir, "the working directory cannot be resolved, so file tools cannot run")
	}
	s.base = base
	return s, nil
}

// confine resolves p (relative to the first working directory) with
// authz.Confine, the resolution the gate checked with; for a write by the
// tool writer ("" for a read) with the call's authz.Speaker.WriteTarget,
// the one answer to "may this call write there" for every speaker. A
// refusal names p only as given; the resolution goes to the debug log.
func (s scope) confine(p, writer string) (authz.Target, error) {
	if p == "" {
		p = "."
	}
	var t authz.Target
	var err error
	switch {
	case writer != "" && s.sp.Valid():
		t, err = s.sp.WriteTarget(writer, p)
	case writer != "":
		t, err = authz.ConfineWrite(s.workDirs, s.stateDir, p)
	default:
		t, err = authz.Confine(s.workDirs, p)
	}
	var pe *authz.PathError
	if errors.As(err, &pe) {
		s.log.Debug("path refused", "path", p, "phrase", pe.Phrase, "resolution", pe.Detail)
		reason := ReasonBadPath
		switch pe.Phrase {
		case authz.PhraseOutside:
			reason = ReasonOutsideWorkDir
		case authz.PhraseProtectedFile, authz.PhraseProtectedDir:
			reason = ReasonProtected
		}
		return authz.Target{}, tooldef.Fail(reason, "%s", pe.Error())
	}
	return t, err
}

// display shows resolved relative to the first working directory when
// it is inside it, else absolute (then it is inside another working
// directory).
func (s scope) display(resolved string) string {
	if rel, err := filepath.Rel(s.base, resolved); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return filepath.ToSlash(rel)
	}
	return resolved
}

// statFailure maps an error of a file operation to a tool failure that
// names the file as shown, never a path of the error.
func statFailure(shown string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return tooldef.Fail(ReasonNotFound, "%s does not exist", shown)
	case errors.Is(err, errChanged):
		return tooldef.Fail(ReasonBadPath, "%s changed while it was being opened; try again", shown)
	case errors.Is(err, errIsDir):
		return tooldef.Fail(ReasonIsDir, "%s is a directory", shown)
	}
	return tooldef.Fail(ReasonIO, "%s: %v", shown, unwrapPath(err))
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

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
