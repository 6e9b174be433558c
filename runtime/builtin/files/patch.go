package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/openprogram/openprogram/internal/clip"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/builtin/internal/tooldef"
	"github.com/openprogram/openprogram/runtime/tool"
)

// oldNew returns the lines a hunk expects and the lines it leaves.
func oldNew(h authz.PatchHunk) (old, new []string) {
	for _, l := range h.Lines {
		if l.Op != '+' {
			old = append(old, l.Text)
		}
		if l.Op != '-' {
			new = append(new, l.Text)
		}
	}
	return old, new
}

// applyHunks applies an Update File section's hunks to content.
func applyHunks(content string, op authz.PatchOp) (string, error) {
	trailingNL := strings.HasSuffix(content, "\n")
	lines := strings.Split(content, "\n")
	if trailingNL {
		lines = lines[:len(lines)-1]
	}
	if content == "" {
		lines = nil
	}
	type repl struct {
		start, n int
		new      []string
	}
	var repls []repl
	cursor := 0
	for i, h := range op.Hunks {
		if h.Header != "" {
			at := findLines(lines, []string{h.Header}, cursor, false)
			if at < 0 {
				return "", fmt.Errorf("hunk %d (patch line %d): context line %q not found in %s", i+1, h.Line, clip.String(h.Header, 60), op.Path)
			}
			cursor = at + 1
		}
		old, new := oldNew(h)
		if len(old) == 0 {
			repls = append(repls, repl{start: len(lines), new: new})
			cursor = len(lines)
			continue
		}
		at := findLines(lines, old, cursor, h.EOF)
		if at < 0 {
			return "", fmt.Errorf("hunk %d (patch line %d): the lines to change were not found in %s after line %d (first: %q); read the file and retry", i+1, h.Line, op.Path, cursor, clip.String(old[0], 60))
		}
		// Context lines keep the file's text (a fuzzy match may differ in
		// whitespace); only + lines come from the patch.
		var merged []string
		idx := at
		for _, l := range h.Lines {
			switch l.Op {
			case ' ':
				merged = append(merged, lines[idx])
				idx++
			case '-':
				idx++
			case '+':
				merged = append(merged, l.Text)
			}
		}
		repls = append(repls, repl{start: at, n: len(old), new: merged})
		cursor = at + len(old)
	}
	for i := len(repls) - 1; i >= 0; i-- {
		r := repls[i]
		tail := append([]string(nil), lines[r.start+r.n:]...)
		lines = append(append(lines[:r.start], r.new...), tail...)
	}
	out := strings.Join(lines, "\n")
	if len(lines) > 0 && (trailingNL || content == "") {
		out += "\n"
	}
	return out, nil
}

// findLines returns the first index >= from where want occurs in lines,
// comparing exactly, then ignoring trailing whitespace, then ignoring
// surrounding whitespace. With eof, only a match ending at the last line
// counts. -1 when there is none.
func findLines(lines, want []string, from int, eof bool) int {
	norms := []func(string) string{
		func(s string) string { return s },
		func(s string) string { return strings.TrimRight(s, " \t") },
		strings.TrimSpace,
	}
	for _, norm := range norms {
		start, end := from, len(lines)-len(want)
		if eof {
			start = max(from, end)
		}
		for i := start; i <= end; i++ {
			ok := true
			for j, w := range want {
				if norm(lines[i+j]) != norm(w) {
					ok = false
					break
				}
			}
			if ok {
				return i
			}
		}
	}
	return -1
}

type applyPatchArgs struct {
	Patch string `json:"patch"`
}

var applyPatchSchema = tooldef.Object([]string{"patch"},
	`"patch": {"type": "string", "minLength": 1, "description": "The patch, from *** Begin Patch to *** End Patch, with *** Add File / *** Update File (optionally *** Move to) / *** Delete File sections; update hunks start with @@ and hold context ( ), removed (-) and added (+) lines."}`,
)

func (c *config) applyPatchTool() tool.Tool {
	return tooldef.New("apply_patch",
		"Apply a multi-file patch in the *** Begin Patch envelope (add, update with context hunks, delete, move) inside the working directories. All or nothing: if any part fails, no file changes.",
		applyPatchSchema, authz.CapFSWrite, c.applyPatch)
}

// maxPatchDirs bounds the directories one patch writes in: each is held
// open (one file descriptor) until the patch is committed.
const maxPatchDirs = 256

// loc is a file of a patch: a name relative to the root of its working
// directory, and how it is shown.
type loc struct {
	root  *os.Root
	rel   string
	shown string
}

// open opens the directory holding l (openParent, without creating
// anything) and returns it with l's name.
func (l loc) open() (*os.Root, string, error) { return openParent(l.root, l.rel, false) }

// change is one planned filesystem change of a patch.
type change struct {
	kind    authz.PatchKind
	target  loc  // file written (add, update) or removed (delete)
	from    *loc // the source of a move, removed after the target is written
	data    []byte
	perm    fs.FileMode
	summary string
}

func (c *config) applyPatch(ctx context.Context, _ string, a applyPatchArgs, _ func(string)) (tool.Result, error) {
	sc, err := c.scope(ctx)
	if err != nil {
		return tool.Result{}, err
	}
	ops, err := authz.ParsePatch(a.Patch)
	if err != nil {
		return tool.Result{}, tooldef.Fail(ReasonBadPatch, "apply_patch: %v", err)
	}
	rs := roots{}
	defer rs.close()
	touched := map[string]string{}
	dirs := map[string]bool{}
	// place confines p for writing, claims it once, and returns where it is.
	place := func(p string) (loc, error) {
		t, err := sc.confine(p, "apply_patch")
		if err != nil {
			return loc{}, err
		}
		shown := sc.display(t.Resolved)
		if prev, dup := touched[t.Resolved]; dup {
			return loc{}, tooldef.Fail(ReasonBadPatch, "apply_patch: %s is changed twice (as %s and %s); put all its changes in one section", shown, prev, p)
		}
		touched[t.Resolved] = p
		if dirs[filepath.Dir(t.Resolved)] = true; len(dirs) > maxPatchDirs {
			return loc{}, tooldef.Fail(ReasonBadPatch, "apply_patch: the patch writes in more than %d directories; split it", maxPatchDirs)
		}
		root, err := rs.of(t)
		if err != nil {
			return loc{}, statFailure(shown, err)
		}
		return loc{root: root, rel: t.Rel, shown: shown}, nil
	}
	var plan []change
	for _, op := range ops {
		l, err := place(op.Path)
		if err != nil {
			return tool.Result{}, err
		}
		switch op.Kind {
		case authz.PatchAdd:
			if err := mustNotExist(l); err != nil {
				return tool.Result{}, err
			}
			data := ""
			if len(op.Lines) > 0 {
				data = strings.Join(op.Lines, "\n") + "\n"
			}
			plan = append(plan, change{kind: authz.PatchAdd, target: l, data: []byte(data), perm: 0o644, summary: "A " + l.shown})
		case authz.PatchDelete:
			if err := mustBeFile(l); err != nil {
				return tool.Result{}, err
			}
			plan = append(plan, change{kind: authz.PatchDelete, target: l, summary: "D " + l.shown})
		case authz.PatchUpdate:
			data, perm, err := c.readLoc(l)
			if err != nil {
				return tool.Result{}, err
			}
			next := string(data)
			if len(op.Hunks) > 0 {
				if next, err = applyHunks(next, op); err != nil {
					return tool.Result{}, tooldef.Fail(ReasonNoMatch, "apply_patch: %v", err)
				}
			}
			ch := change{kind: authz.PatchUpdate, target: l, data: []byte(next), perm: perm, summary: "M " + l.shown}
			if op.MoveTo != "" {
				dst, err := place(op.MoveTo)
				if err != nil {
					return tool.Result{}, err
				}
				if err := mustNotExist(dst); err != nil {
					return tool.Result{}, err
				}
				src := l
				ch.from, ch.target = &src, dst
				ch.summary = "R " + l.shown + " -> " + dst.shown
			}
			plan = append(plan, ch)
		}
	}
	if err := ctx.Err(); err != nil {
		return tool.Result{}, err
	}
	if err := commit(plan); err != nil {
		return tool.Result{}, tooldef.Fail(ReasonIO, "apply_patch: nothing was changed: %v", err)
	}
	summary := make([]string, len(plan))
	for i, ch := range plan {
		summary[i] = ch.summary
	}
	return tool.Result{
		Content: []tool.Content{tool.Text("applied patch:\n" + strings.Join(summary, "\n"))},
		Details: map[string]any{"files": len(plan)},
	}, nil
}

// mustNotExist fails unless nothing is at l (a missing directory on the
// way counts as nothing).
func mustNotExist(l loc) error {
	dir, name, err := l.open()
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return statFailure(l.shown, err)
	}
	defer dir.Close()
	if _, err := dir.Lstat(name); err == nil {
		return tooldef.Fail(ReasonExists, "apply_patch: %s already exists", l.shown)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return statFailure(l.shown, err)
	}
	return nil
}

// mustBeFile fails unless l is a regular file.
func mustBeFile(l loc) error {
	dir, name, err := l.open()
	if err != nil {
		return statFailure(l.shown, err)
	}
	defer dir.Close()
	fi, err := dir.Lstat(name)
	if err != nil {
		return statFailure(l.shown, err)
	}
	if !fi.Mode().IsRegular() {
		return tooldef.Fail(ReasonBadPath, "apply_patch: %s is not a regular file", l.shown)
	}
	return nil
}

// readLoc reads the text file at l for an update.
func (c *config) readLoc(l loc) ([]byte, fs.FileMode, error) {
	dir, name, err := l.open()
	if err != nil {
		return nil, 0, statFailure(l.shown, err)
	}
	defer dir.Close()
	return c.readTextFile(dir, name, l.shown)
}

// commit carries out plan all or nothing: new contents are staged in
// temporary files, every file about to be replaced or removed is moved to
// a backup, the staged files are renamed into place, and only then are
// the backups removed. On any failure the backups are restored and the
// staged files removed. Every step happens inside the directory of its
// file, opened once (openDir) and held until the end, so a symlink
// swapped in meanwhile changes nothing: every rename is within one
// directory handle.
func commit(plan []change) (err error) {
	// rootDir is a directory under a working directory's root: the key of
	// a held directory handle and an entry of the directories made.
	type rootDir struct {
		root *os.Root
		dir  string
	}
	held := map[rootDir]*os.Root{}
	var madeDirs []rootDir
	dirOf := func(l loc, create bool) (*os.Root, string, error) {
		dirRel, name := filepath.Dir(l.rel), filepath.Base(l.rel)
		k := rootDir{l.root, dirRel}
		if d, ok := held[k]; ok {
			return d, name, nil
		}
		d, mk, err := openDir(l.root, dirRel, create)
		for _, m := range mk {
			madeDirs = append(madeDirs, rootDir{l.root, m})
		}
		if err != nil {
			return nil, "", err
		}
		held[k] = d
		return d, name, nil
	}
	type placed struct {
		dir       *os.Root
		tmp, name string
	}
	var staged, installed []placed
	type backup struct {
		dir       *os.Root
		name, bak string
		shown     string
	}
	var backups []backup
	defer func() {
		if err != nil {
			for i := len(installed) - 1; i >= 0; i-- {
				_ = installed[i].dir.Remove(installed[i].name)
			}
			for i := len(backups) - 1; i >= 0; i-- {
				b := backups[i]
				if rerr := restoreRename(b.dir, b.bak, b.name); rerr != nil {
					// Never lose the original silently: say where it is.
					err = errors.Join(err, fmt.Errorf("restore %s failed (%w); its original content is in %s", b.shown, unwrapPath(rerr),
						filepath.ToSlash(filepath.Join(filepath.Dir(b.shown), b.bak))))
				}
			}
			for _, s := range staged {
				_ = s.dir.Remove(s.tmp)
			}
		}
		for _, d := range held {
			_ = d.Close()
		}
		if err != nil {
			for i := len(madeDirs) - 1; i >= 0; i-- {
				m := madeDirs[i]
				if parent, _, perr := openDir(m.root, filepath.Dir(m.dir), false); perr == nil {
					_ = parent.Remove(filepath.Base(m.dir))
					_ = parent.Close()
				}
			}
		}
	}()

	for _, ch := range plan {
		if ch.kind == authz.PatchDelete {
			continue
		}
		dir, name, err := dirOf(ch.target, true)
		if err != nil {
			return fmt.Errorf("%s: %w", ch.target.shown, unwrapPath(err))
		}
		tmp, err := stage(dir, name, ch.data, ch.perm)
		if err != nil {
			return fmt.Errorf("%s: %w", ch.target.shown, unwrapPath(err))
		}
		staged = append(staged, placed{dir: dir, tmp: tmp, name: name})
	}
	for _, ch := range plan {
		var orig loc
		switch {
		case ch.kind == authz.PatchDelete:
			orig = ch.target
		case ch.from != nil:
			orig = *ch.from
		case ch.kind == authz.PatchUpdate:
			orig = ch.target
		default:
			continue
		}
		dir, name, err := dirOf(orig, false)
		if err != nil {
			return fmt.Errorf("%s: %w", orig.shown, unwrapPath(err))
		}
		f, bak, err := reserve(dir, name, ".bak-")
		if err != nil {
			return fmt.Errorf("%s: %w", orig.shown, unwrapPath(err))
		}
		_ = f.Close()
		if err := commitRename(dir, name, bak); err != nil {
			_ = dir.Remove(bak)
			return fmt.Errorf("%s: %w", orig.shown, unwrapPath(err))
		}
		backups = append(backups, backup{dir: dir, name: name, bak: bak, shown: orig.shown})
	}
	for _, s := range staged {
		if err := commitRename(s.dir, s.tmp, s.name); err != nil {
			return unwrapPath(err)
		}
		installed = append(installed, s)
	}
	staged = nil
	for _, b := range backups {
		_ = b.dir.Remove(b.bak)
	}
	return nil
}

// unwrapPath drops the path of a *fs.PathError or *os.LinkError, so a
// message names files only as the tool shows them.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// commitRename and restoreRename rename within one directory; tests
// replace them to fail part-way through a commit or its rollback.
var (
	commitRename  = func(dir *os.Root, from, to string) error { return dir.Rename(from, to) }
	restoreRename = func(dir *os.Root, from, to string) error { return dir.Rename(from, to) }
)
