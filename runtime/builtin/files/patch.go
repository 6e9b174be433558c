package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/builtin/internal/tooldef"
	"github.com/openprogram/openprogram/runtime/tool"
)

// Envelope markers of apply_patch.
const (
	markBegin     = "*** Begin Patch"
	markEnd       = "*** End Patch"
	markAdd       = "*** Add File: "
	markUpdate    = "*** Update File: "
	markDelete    = "*** Delete File: "
	markMove      = "*** Move to: "
	markEndOfFile = "*** End of File"
)

// unifiedRange matches the line ranges of a unified diff hunk header.
var unifiedRange = regexp.MustCompile(`^-\d+(,\d+)? \+\d+(,\d+)? @@`)

type opKind int

const (
	opAdd opKind = iota
	opUpdate
	opDelete
)

// fileOp is one file section of a patch.
type fileOp struct {
	kind   opKind
	path   string
	moveTo string
	lines  []string // opAdd: the new file's lines
	hunks  []hunk   // opUpdate
	line   int      // line number of the section header, for messages
}

// hunk is one change of an Update File section: context lines (' '),
// removed lines ('-') and added lines ('+'), optionally anchored after a
// line equal to header and at the end of the file.
type hunk struct {
	header string
	lines  []hunkLine
	eof    bool
	line   int
}

type hunkLine struct {
	op   byte
	text string
	bare bool // an empty patch line read as an empty context line
}

func (h hunk) oldNew() (old, new []string) {
	for _, l := range h.lines {
		if l.op != '+' {
			old = append(old, l.text)
		}
		if l.op != '-' {
			new = append(new, l.text)
		}
	}
	return old, new
}

// parsePatch parses the "*** Begin Patch" envelope. It is at least as
// strict as authz.PatchTargets (which the gate uses), so every path the
// gate checked is every path this parser writes.
func parsePatch(patch string) ([]fileOp, error) {
	if _, err := authz.PatchTargets(patch); err != nil {
		return nil, err
	}
	lines := strings.Split(patch, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	first, last := -1, -1
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	var ops []fileOp
	var cur *fileOp
	var h *hunk
	flush := func() error {
		if h != nil {
			if err := flushHunk(cur, &h); err != nil {
				return err
			}
		}
		if cur != nil {
			if cur.kind == opUpdate && len(cur.hunks) == 0 && cur.moveTo == "" {
				return fmt.Errorf("patch line %d: Update File %s has no changes", cur.line, cur.path)
			}
			ops = append(ops, *cur)
			cur = nil
		}
		return nil
	}
	for i := first + 1; i < last; i++ {
		raw := lines[i]
		lineNo := i + 1
		if t := strings.TrimLeft(raw, " \t"); strings.HasPrefix(t, "***") {
			// Markers are recognised even when indented, exactly as
			// authz.PatchTargets does.
			marker := strings.TrimRight(t, " \t")
			handled := true
			switch {
			case strings.HasPrefix(marker+" ", markAdd), strings.HasPrefix(marker+" ", markUpdate), strings.HasPrefix(marker+" ", markDelete):
				if err := flush(); err != nil {
					return nil, err
				}
				switch {
				case strings.HasPrefix(marker+" ", markAdd):
					cur = &fileOp{kind: opAdd, path: markerArg(raw, markAdd), line: lineNo}
				case strings.HasPrefix(marker+" ", markUpdate):
					cur = &fileOp{kind: opUpdate, path: markerArg(raw, markUpdate), line: lineNo}
				default:
					cur = &fileOp{kind: opDelete, path: markerArg(raw, markDelete), line: lineNo}
				}
			case strings.HasPrefix(marker+" ", markMove):
				if cur == nil || cur.kind != opUpdate || h != nil || len(cur.hunks) > 0 || cur.moveTo != "" {
					return nil, fmt.Errorf("patch line %d: %q must directly follow an Update File line", lineNo, strings.TrimSpace(markMove))
				}
				cur.moveTo = markerArg(raw, markMove)
			case marker == markEndOfFile:
				if h == nil {
					return nil, fmt.Errorf("patch line %d: %q outside a hunk", lineNo, markEndOfFile)
				}
				h.eof = true
				if err := flushHunk(cur, &h); err != nil {
					return nil, err
				}
			case t == raw:
				return nil, fmt.Errorf("patch line %d: unknown marker %q", lineNo, authz.Clip(marker, 60))
			default:
				handled = false // indented text, e.g. a context line
			}
			if handled {
				continue
			}
		}
		if cur == nil {
			if strings.TrimSpace(raw) == "" {
				continue
			}
			return nil, fmt.Errorf("patch line %d: text outside a file section", lineNo)
		}
		switch cur.kind {
		case opAdd:
			if !strings.HasPrefix(raw, "+") {
				return nil, fmt.Errorf("patch line %d: every line of an Add File section must start with +", lineNo)
			}
			cur.lines = append(cur.lines, raw[1:])
		case opDelete:
			if strings.TrimSpace(raw) != "" {
				return nil, fmt.Errorf("patch line %d: a Delete File section has no content", lineNo)
			}
		case opUpdate:
			switch {
			case raw == "@@" || strings.HasPrefix(raw, "@@ "):
				if err := flushHunk(cur, &h); err != nil {
					return nil, err
				}
				header := strings.TrimSpace(strings.TrimPrefix(raw, "@@"))
				if unifiedRange.MatchString(header) {
					header = "" // "@@ -1,3 +1,4 @@" from a unified diff: no anchor
				}
				h = &hunk{header: header, line: lineNo}
			case raw == "" || raw[0] == ' ' || raw[0] == '-' || raw[0] == '+':
				if h == nil {
					h = &hunk{line: lineNo}
				}
				if raw == "" {
					// Editors and models often strip the space of an empty context line.
					h.lines = append(h.lines, hunkLine{op: ' ', bare: true})
				} else {
					h.lines = append(h.lines, hunkLine{op: raw[0], text: raw[1:]})
				}
			default:
				return nil, fmt.Errorf("patch line %d: hunk lines start with space, - or +, and hunks with @@", lineNo)
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return nil, errors.New("patch has no file operations")
	}
	return ops, nil
}

func flushHunk(cur *fileOp, h **hunk) error {
	if *h == nil {
		return nil
	}
	// Blank lines that only separate sections are not context.
	for n := len((*h).lines); n > 0 && (*h).lines[n-1].bare; n-- {
		(*h).lines = (*h).lines[:n-1]
	}
	if len((*h).lines) == 0 {
		return fmt.Errorf("patch line %d: empty hunk", (*h).line)
	}
	cur.hunks = append(cur.hunks, **h)
	*h = nil
	return nil
}

func markerArg(line, marker string) string {
	t := strings.TrimLeft(line, " \t")
	p, _ := strings.CutPrefix(t, marker)
	return p
}

// applyHunks applies an Update File section's hunks to content.
func applyHunks(content string, op fileOp) (string, error) {
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
	for i, h := range op.hunks {
		if h.header != "" {
			at := findLines(lines, []string{h.header}, cursor, false)
			if at < 0 {
				return "", fmt.Errorf("hunk %d (patch line %d): context line %q not found in %s", i+1, h.line, authz.Clip(h.header, 60), op.path)
			}
			cursor = at + 1
		}
		old, new := h.oldNew()
		if len(old) == 0 {
			repls = append(repls, repl{start: len(lines), new: new})
			cursor = len(lines)
			continue
		}
		at := findLines(lines, old, cursor, h.eof)
		if at < 0 {
			return "", fmt.Errorf("hunk %d (patch line %d): the lines to change were not found in %s after line %d (first: %q); read the file and retry", i+1, h.line, op.path, cursor, authz.Clip(old[0], 60))
		}
		// Context lines keep the file's text (a fuzzy match may differ in
		// whitespace); only + lines come from the patch.
		var merged []string
		idx := at
		for _, l := range h.lines {
			switch l.op {
			case ' ':
				merged = append(merged, lines[idx])
				idx++
			case '-':
				idx++
			case '+':
				merged = append(merged, l.text)
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

const applyPatchSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "patch": {"type": "string", "minLength": 1, "description": "The patch, from *** Begin Patch to *** End Patch, with *** Add File / *** Update File (optionally *** Move to) / *** Delete File sections; update hunks start with @@ and hold context ( ), removed (-) and added (+) lines."}
  },
  "required": ["patch"],
  "additionalProperties": false
}`

func (c *config) applyPatchTool() tool.Tool {
	return tooldef.New("apply_patch",
		"Apply a multi-file patch in the *** Begin Patch envelope (add, update with context hunks, delete, move) inside the working directories. All or nothing: if any part fails, no file changes.",
		applyPatchSchema, authz.CapFSWrite, c.applyPatch)
}

// change is one planned filesystem change of a patch.
type change struct {
	kind    opKind
	shown   string
	target  string // file written (add, update) or removed (delete)
	from    string // the source of a move, removed after the target is written
	data    []byte
	perm    fs.FileMode
	summary string
}

func (c *config) applyPatch(ctx context.Context, _ string, a applyPatchArgs, _ func(string)) (tool.Result, error) {
	sc, err := c.scope(ctx)
	if err != nil {
		return tool.Result{}, err
	}
	ops, err := parsePatch(a.Patch)
	if err != nil {
		return tool.Result{}, tooldef.Fail(ReasonBadPatch, "apply_patch: %v", err)
	}
	touched := map[string]string{}
	claim := func(resolved, as string) error {
		if prev, dup := touched[resolved]; dup {
			return tooldef.Fail(ReasonBadPatch, "apply_patch: %s is changed twice (as %s and %s); put all its changes in one section", sc.display(resolved), prev, as)
		}
		touched[resolved] = as
		return nil
	}
	var plan []change
	for _, op := range ops {
		p, err := sc.resolve(op.path)
		if err != nil {
			return tool.Result{}, err
		}
		shown := sc.display(p)
		if err := claim(p, op.path); err != nil {
			return tool.Result{}, err
		}
		switch op.kind {
		case opAdd:
			if _, err := os.Lstat(p); err == nil {
				return tool.Result{}, tooldef.Fail(ReasonExists, "apply_patch: %s already exists; use Update File", shown)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return tool.Result{}, statFailure(shown, err)
			}
			data := ""
			if len(op.lines) > 0 {
				data = strings.Join(op.lines, "\n") + "\n"
			}
			plan = append(plan, change{kind: opAdd, shown: shown, target: p, data: []byte(data), perm: 0o644, summary: "A " + shown})
		case opDelete:
			fi, err := os.Stat(p)
			if err != nil {
				return tool.Result{}, statFailure(shown, err)
			}
			if !fi.Mode().IsRegular() {
				return tool.Result{}, tooldef.Fail(ReasonBadPath, "apply_patch: %s is not a regular file", shown)
			}
			plan = append(plan, change{kind: opDelete, shown: shown, target: p, summary: "D " + shown})
		case opUpdate:
			data, perm, err := c.readTextFile(p, shown)
			if err != nil {
				return tool.Result{}, err
			}
			next := string(data)
			if len(op.hunks) > 0 {
				if next, err = applyHunks(next, op); err != nil {
					return tool.Result{}, tooldef.Fail(ReasonNoMatch, "apply_patch: %v", err)
				}
			}
			ch := change{kind: opUpdate, shown: shown, target: p, data: []byte(next), perm: perm, summary: "M " + shown}
			if op.moveTo != "" {
				dst, err := sc.resolve(op.moveTo)
				if err != nil {
					return tool.Result{}, err
				}
				if dst != p {
					if err := claim(dst, op.moveTo); err != nil {
						return tool.Result{}, err
					}
					if _, err := os.Lstat(dst); err == nil {
						return tool.Result{}, tooldef.Fail(ReasonExists, "apply_patch: move target %s already exists", sc.display(dst))
					} else if !errors.Is(err, fs.ErrNotExist) {
						return tool.Result{}, statFailure(sc.display(dst), err)
					}
					ch.from, ch.target = p, dst
					ch.summary = "R " + shown + " -> " + sc.display(dst)
				}
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

// commit carries out plan all or nothing: new contents are staged in
// temporary files, every file about to be replaced or removed is moved to
// a backup, the staged files are renamed into place, and only then are
// the backups removed. On any failure the backups are restored and the
// staged files removed.
func commit(plan []change) (err error) {
	type placed struct{ tmp, target string }
	var staged []placed
	var madeDirs []string
	type backup struct{ orig, bak string }
	var backups []backup
	var installed []string
	defer func() {
		if err == nil {
			return
		}
		for i := len(installed) - 1; i >= 0; i-- {
			_ = os.Remove(installed[i])
		}
		for i := len(backups) - 1; i >= 0; i-- {
			if rerr := restoreRename(backups[i].bak, backups[i].orig); rerr != nil {
				// Never lose the original silently: say where it is.
				err = errors.Join(err, fmt.Errorf("restore %s failed (%w); its original content is in %s", backups[i].orig, rerr, backups[i].bak))
			}
		}
		for _, s := range staged {
			_ = os.Remove(s.tmp)
		}
		for i := len(madeDirs) - 1; i >= 0; i-- {
			_ = os.Remove(madeDirs[i])
		}
	}()

	for _, ch := range plan {
		if ch.kind == opDelete {
			continue
		}
		dirs, err := mkdirs(filepath.Dir(ch.target))
		madeDirs = append(madeDirs, dirs...)
		if err != nil {
			return err
		}
		tmp, err := stage(ch.target, ch.data, ch.perm)
		if err != nil {
			return err
		}
		staged = append(staged, placed{tmp: tmp, target: ch.target})
	}
	for _, ch := range plan {
		var orig string
		switch {
		case ch.kind == opDelete:
			orig = ch.target
		case ch.from != "":
			orig = ch.from
		case ch.kind == opUpdate:
			orig = ch.target
		default:
			continue
		}
		bak, err := backupName(orig)
		if err != nil {
			return err
		}
		if err := commitRename(orig, bak); err != nil {
			_ = os.Remove(bak)
			return err
		}
		backups = append(backups, backup{orig: orig, bak: bak})
	}
	for _, s := range staged {
		if err := commitRename(s.tmp, s.target); err != nil {
			return err
		}
		installed = append(installed, s.target)
	}
	staged = nil
	for _, b := range backups {
		_ = os.Remove(b.bak)
	}
	return nil
}

// commitRename and restoreRename are os.Rename; tests replace them to fail
// part-way through a commit or its rollback.
var (
	commitRename  = os.Rename
	restoreRename = os.Rename
)

// backupName reserves an unused name next to orig.
func backupName(orig string) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(orig), "."+filepath.Base(orig)+".bak-*")
	if err != nil {
		return "", err
	}
	name := f.Name()
	_ = f.Close()
	return name, nil
}

// mkdirs creates dir and its missing parents, returning the ones it
// created (outermost first) so a failed commit can remove them.
func mkdirs(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	var made []string
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return made, err
		}
		made = append(made, missing[i])
	}
	return made, nil
}
