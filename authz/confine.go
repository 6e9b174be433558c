package authz

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/openprogram/openprogram/internal/clip"
)

// The fixed phrases of a path denial. A [PathError] says one of them and nothing else
// about the filesystem, so a denial shown to a model (and read back by any MCP client)
// never reveals a resolved path, a symlink target, the server's working directory or
// binary, its open files, or whether anything outside the working directories exists.
const (
	PhraseOutside       = "outside the working directories"
	PhraseProtectedFile = "a protected file"
	PhraseProtectedDir  = "a protected directory"
	PhraseUnresolvable  = "cannot be resolved"
)

// PathError is a path refused by [Confine] or [ConfineWrite].
type PathError struct {
	// Path is the path exactly as the tool call gave it.
	Path string
	// Phrase is one of the Phrase constants.
	Phrase string
	// Detail is the full resolution (resolved path, symlink targets, the failing
	// system call). It is for a server log at debug level only: never show it to a
	// model, and never store it in a session or the audit log.
	Detail string
}

// Error names the path as given (clipped and quoted when needed) and the phrase,
// e.g. `/proc/self/cwd/x is outside the working directories`. It never includes
// Detail.
func (e *PathError) Error() string {
	p := show(clip.String(e.Path, msgClip))
	switch e.Phrase {
	case PhraseUnresolvable:
		return p + " " + e.Phrase
	case PhraseProtectedDir:
		return p + " is inside " + e.Phrase
	}
	return p + " is " + e.Phrase
}

// Target is a path resolved inside the working directories by [Confine].
type Target struct {
	// Resolved is the absolute path with every symlink resolved.
	Resolved string
	// WorkDir is the resolved working directory that holds Resolved.
	WorkDir string
	// Rel is Resolved relative to WorkDir: "." for WorkDir itself, else a clean
	// relative path without "..".
	Rel string
}

// Confine resolves p the way [ResolvePath] does (a relative p starts at workDirs[0])
// and requires the result inside one of workDirs (see [InsideWorkDirs]). It is the one
// resolution of a tool's target path: the gate checks with it, and the file tools
// operate on its Target through an [os.Root] opened on Target.WorkDir, so what was
// checked is what is used. Every error is a *[PathError]: a failure to resolve at a
// place outside the working directories is reported as outside them, so the phrase
// never tells whether something outside exists.
func Confine(workDirs []string, p string) (Target, error) {
	base := ""
	if len(workDirs) > 0 {
		base = workDirs[0]
	}
	r, at, err := resolvePath(base, p)
	if err != nil {
		phrase := PhraseUnresolvable
		if at != "" && insideAny(at, workDirs) == "" {
			phrase = PhraseOutside
		}
		return Target{}, &PathError{Path: p, Phrase: phrase, Detail: err.Error()}
	}
	wd := insideAny(r, workDirs)
	if wd == "" {
		return Target{}, &PathError{Path: p, Phrase: PhraseOutside, Detail: "resolved to " + r}
	}
	rel, err := filepath.Rel(wd, r)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return Target{}, &PathError{Path: p, Phrase: PhraseUnresolvable, Detail: fmt.Sprintf("resolved to %s, not below %s", r, wd)}
	}
	return Target{Resolved: r, WorkDir: wd, Rel: rel}, nil
}

// ConfineWrite is [Confine] for a write by a constrained source: the target must
// also not be a dangerous file nor inside a dangerous directory ([IsDangerousPath]) or
// inside stateDir, the state directory wherever it is (ignored when empty or relative;
// compared both as given and resolved). It is [Speaker.WriteTarget] for a source
// that is not the owner's console.
func ConfineWrite(workDirs []string, stateDir, p string) (Target, error) {
	return confineWrite(workDirs, stateDir, p, nil)
}

// WriteTarget is the one answer to "may this call of tool write p", for every
// speaker: the gate decides with it and the file tools write through the
// [Target] it returns. p must resolve inside the working directories
// ([Confine]) and never inside the state directory ([Speaker.StateDir],
// compared as given and resolved, so a symlink does not hide it), whatever
// the source, the mode or the rules. A dangerous file or directory
// ([IsDangerousPath]) is refused too, except for the owner's console
// ([SourceCLI]) when an allow rule for tool names exactly that path: an
// allow rule for the tool, a glob or a prefix is not enough. Every error is a
// *[PathError].
func (sp Speaker) WriteTarget(tool, p string) (Target, error) {
	if !sp.made {
		return Target{}, &PathError{Path: p, Phrase: PhraseOutside, Detail: "the speaker was not made by authz"}
	}
	var exception func(resolved string) bool
	if !IsConstrained(sp.source) {
		exception = func(resolved string) bool { return sp.namesExactly(tool, resolved) }
	}
	return confineWrite(sp.workDirs, sp.stateDir, p, exception)
}

// confineWrite confines p and refuses the state directory always, and a
// dangerous path unless dangerousOK (nil: never) accepts its resolution.
func confineWrite(workDirs []string, stateDir, p string, dangerousOK func(resolved string) bool) (Target, error) {
	t, err := Confine(workDirs, p)
	if err != nil {
		return Target{}, err
	}
	if InStateDir(stateDir, t.Resolved) {
		return Target{}, &PathError{Path: p, Phrase: PhraseProtectedDir, Detail: "resolved to " + t.Resolved}
	}
	if phrase := protection(t.Resolved); phrase != "" && (dangerousOK == nil || !dangerousOK(t.Resolved)) {
		return Target{}, &PathError{Path: p, Phrase: phrase, Detail: "resolved to " + t.Resolved}
	}
	return t, nil
}

// InStateDir reports whether resolved (an absolute path from [ResolvePath]) is
// the state directory stateDir or below it. stateDir is compared as given and
// with its symlinks resolved; an empty or relative stateDir holds nothing.
func InStateDir(stateDir, resolved string) bool {
	if stateDir == "" || !filepath.IsAbs(stateDir) || strings.IndexByte(stateDir, 0) >= 0 || !filepath.IsAbs(resolved) {
		return false
	}
	resolved = filepath.Clean(resolved)
	if within(resolved, filepath.Clean(stateDir)) {
		return true
	}
	s, err := ResolvePath("", stateDir)
	return err == nil && within(resolved, s)
}

// insideAny returns the resolved working directory of workDirs that holds the
// resolved path p, or "".
func insideAny(p string, workDirs []string) string {
	for _, wd := range workDirs {
		if !filepath.IsAbs(wd) {
			continue
		}
		w, err := ResolvePath("", wd)
		if err != nil {
			continue
		}
		if within(p, w) {
			return w
		}
	}
	return ""
}
