package authz

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/openprogram/openprogram/internal/clip"
)

// The apply_patch envelope markers.
const (
	patchBegin      = "*** Begin Patch"
	patchEnd        = "*** End Patch"
	patchAdd        = "*** Add File: "
	patchUpdate     = "*** Update File: "
	patchDelete     = "*** Delete File: "
	patchMove       = "*** Move to: "
	patchEndOfFile  = "*** End of File"
	maxPatchTargets = 10000
)

// unifiedRange matches the line ranges of a unified diff hunk header.
var unifiedRange = regexp.MustCompile(`^-\d+(,\d+)? \+\d+(,\d+)? @@`)

// PatchKind is what a file section of a patch does.
type PatchKind int

// The kinds of [PatchOp].
const (
	PatchAdd PatchKind = iota + 1
	PatchUpdate
	PatchDelete
)

// PatchOp is one file section of an apply_patch envelope.
type PatchOp struct {
	Kind PatchKind
	// Path is the file the section names, exactly as written.
	Path string
	// MoveTo is the destination of an Update File section's "*** Move to:", or "".
	MoveTo string
	// Lines are the new file's lines (PatchAdd), without their "+".
	Lines []string
	// Hunks are the changes of a PatchUpdate section, in order.
	Hunks []PatchHunk
	// Line is the 1-based line of the section header, for messages.
	Line int
}

// PatchHunk is one change of an Update File section.
type PatchHunk struct {
	// Header is the line the hunk comes after ("@@ <header>"), or "" (also for
	// a unified-diff "@@ -1,3 +1,4 @@").
	Header string
	// Lines are the hunk's context (' '), removed ('-') and added ('+') lines.
	Lines []PatchLine
	// EOF reports "*** End of File": the hunk must end at the file's last line.
	EOF bool
	// Line is the 1-based line where the hunk starts, for messages.
	Line int
}

// PatchLine is one line of a hunk: Op is ' ', '-' or '+', Text the line without it.
type PatchLine struct {
	Op   byte
	Text string
}

// ParsePatch parses an apply_patch envelope. It is the one parser of the format: the
// gate checks the paths of its operations ([PatchTargets]) and the apply_patch tool
// applies the same operations, so no path can be written that was not checked.
//
// It is strict: the first non-blank line must be "*** Begin Patch" and the last
// "*** End Patch"; a marker line is recognised even when indented; a line starting with
// "***" in column 0 that is no known marker, a nested Begin or End, a "Move to" that
// does not directly follow its Update File line, an empty path, a path with
// surrounding whitespace or a NUL byte, more than 10000 distinct paths, text outside a
// file section, an Add File line without "+", content in a Delete File section, an
// Update File section without changes or move, an empty hunk, and an envelope with no
// file operation are errors. Lines may end in "\r\n". An empty line inside a hunk is an
// empty context line (editors strip its space), except at the end of a hunk.
func ParsePatch(patch string) ([]PatchOp, error) {
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
	if first < 0 {
		return nil, errors.New("patch is empty")
	}
	if strings.TrimSpace(lines[first]) != patchBegin {
		return nil, fmt.Errorf("patch must start with %q", patchBegin)
	}
	if first == last || strings.TrimSpace(lines[last]) != patchEnd {
		return nil, fmt.Errorf("patch must end with %q", patchEnd)
	}
	p := patchParser{seen: map[string]bool{}}
	for i := first + 1; i < last; i++ {
		if err := p.line(i+1, lines[i]); err != nil {
			return nil, err
		}
	}
	if err := p.flush(); err != nil {
		return nil, err
	}
	if len(p.ops) == 0 {
		return nil, errors.New("patch has no file operations")
	}
	return p.ops, nil
}

// PatchTargets returns every path an apply_patch envelope names (Add File, Update File,
// Delete File and Move to destinations), in order, without duplicates: the paths of
// the operations [ParsePatch] returns, with its errors.
func PatchTargets(patch string) ([]string, error) {
	ops, err := ParsePatch(patch)
	if err != nil {
		return nil, err
	}
	var targets []string
	seen := map[string]bool{}
	for _, op := range ops {
		for _, t := range []string{op.Path, op.MoveTo} {
			if t != "" && !seen[t] {
				seen[t] = true
				targets = append(targets, t)
			}
		}
	}
	return targets, nil
}

// patchParser is the state of [ParsePatch] between lines.
type patchParser struct {
	ops  []PatchOp
	cur  *PatchOp
	h    *PatchHunk
	bare []bool // per line of h: an empty patch line read as an empty context line
	seen map[string]bool
}

func (p *patchParser) line(lineNo int, raw string) error {
	if t := strings.TrimLeft(raw, " \t"); strings.HasPrefix(t, "***") {
		indented := t != raw
		marker := strings.TrimRight(t, " \t")
		switch {
		case marker == patchBegin || marker == patchEnd:
			return fmt.Errorf("patch line %d: unexpected %q", lineNo, marker)
		case strings.HasPrefix(marker+" ", patchAdd), strings.HasPrefix(marker+" ", patchUpdate), strings.HasPrefix(marker+" ", patchDelete):
			if err := p.flush(); err != nil {
				return err
			}
			op := PatchOp{Kind: PatchDelete, Line: lineNo}
			m := patchDelete
			switch {
			case strings.HasPrefix(marker+" ", patchAdd):
				op.Kind, m = PatchAdd, patchAdd
			case strings.HasPrefix(marker+" ", patchUpdate):
				op.Kind, m = PatchUpdate, patchUpdate
			}
			path, err := p.path(lineNo, t, m)
			if err != nil {
				return err
			}
			op.Path = path
			p.cur = &op
			return nil
		case strings.HasPrefix(marker+" ", patchMove):
			if p.cur == nil || p.cur.Kind != PatchUpdate || p.h != nil || len(p.cur.Hunks) > 0 || p.cur.MoveTo != "" {
				return fmt.Errorf("patch line %d: %q must directly follow an Update File line", lineNo, strings.TrimSpace(patchMove))
			}
			path, err := p.path(lineNo, t, patchMove)
			if err != nil {
				return err
			}
			p.cur.MoveTo = path
			return nil
		case marker == patchEndOfFile:
			if p.h == nil {
				return fmt.Errorf("patch line %d: %q outside a hunk", lineNo, patchEndOfFile)
			}
			p.h.EOF = true
			return p.flushHunk()
		case !indented:
			return fmt.Errorf("patch line %d: unknown marker %s", lineNo, show(clip.String(marker, msgClip)))
		}
		// Indented text such as a Markdown rule in a context line.
	}
	if p.cur == nil {
		if strings.TrimSpace(raw) == "" {
			return nil
		}
		return fmt.Errorf("patch line %d: text outside a file section", lineNo)
	}
	switch p.cur.Kind {
	case PatchAdd:
		if !strings.HasPrefix(raw, "+") {
			return fmt.Errorf("patch line %d: every line of an Add File section must start with +", lineNo)
		}
		p.cur.Lines = append(p.cur.Lines, raw[1:])
	case PatchDelete:
		if strings.TrimSpace(raw) != "" {
			return fmt.Errorf("patch line %d: a Delete File section has no content", lineNo)
		}
	case PatchUpdate:
		switch {
		case raw == "@@" || strings.HasPrefix(raw, "@@ "):
			if err := p.flushHunk(); err != nil {
				return err
			}
			header := strings.TrimSpace(strings.TrimPrefix(raw, "@@"))
			if unifiedRange.MatchString(header) {
				header = "" // "@@ -1,3 +1,4 @@" from a unified diff: no anchor
			}
			p.h = &PatchHunk{Header: header, Line: lineNo}
		case raw == "" || raw[0] == ' ' || raw[0] == '-' || raw[0] == '+':
			if p.h == nil {
				p.h = &PatchHunk{Line: lineNo}
			}
			if raw == "" {
				p.h.Lines = append(p.h.Lines, PatchLine{Op: ' '})
			} else {
				p.h.Lines = append(p.h.Lines, PatchLine{Op: raw[0], Text: raw[1:]})
			}
			p.bare = append(p.bare, raw == "")
		default:
			return fmt.Errorf("patch line %d: hunk lines start with space, - or +, and hunks with @@", lineNo)
		}
	}
	return nil
}

// path returns and checks the path after marker on the (left-trimmed) line t.
func (p *patchParser) path(lineNo int, t, marker string) (string, error) {
	path, ok := strings.CutPrefix(t, marker)
	switch {
	case !ok || path == "":
		return "", fmt.Errorf("patch line %d: empty path", lineNo)
	case strings.TrimSpace(path) != path:
		return "", fmt.Errorf("patch line %d: path %s has leading or trailing whitespace", lineNo, show(clip.String(path, msgClip)))
	case strings.IndexByte(path, 0) >= 0:
		return "", fmt.Errorf("patch line %d: path contains a NUL byte", lineNo)
	}
	if !p.seen[path] {
		if len(p.seen) >= maxPatchTargets {
			return "", fmt.Errorf("patch names more than %d files", maxPatchTargets)
		}
		p.seen[path] = true
	}
	return path, nil
}

// flush ends the current file section.
func (p *patchParser) flush() error {
	if err := p.flushHunk(); err != nil {
		return err
	}
	if p.cur != nil {
		if p.cur.Kind == PatchUpdate && len(p.cur.Hunks) == 0 && p.cur.MoveTo == "" {
			return fmt.Errorf("patch line %d: Update File %s has no changes", p.cur.Line, show(clip.String(p.cur.Path, msgClip)))
		}
		p.ops = append(p.ops, *p.cur)
		p.cur = nil
	}
	return nil
}

// flushHunk ends the current hunk. Blank lines that only separate sections are not
// context.
func (p *patchParser) flushHunk() error {
	if p.h == nil {
		return nil
	}
	n := len(p.h.Lines)
	for n > 0 && p.bare[n-1] {
		n--
	}
	p.h.Lines = p.h.Lines[:n]
	if n == 0 {
		return fmt.Errorf("patch line %d: empty hunk", p.h.Line)
	}
	p.cur.Hunks = append(p.cur.Hunks, *p.h)
	p.h, p.bare = nil, nil
	return nil
}
