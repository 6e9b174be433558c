package authz

import (
	"errors"
	"fmt"
	"strings"
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

// PatchTargets returns every path an apply_patch envelope names (Add File, Update File,
// Delete File and Move to destinations), in order, without duplicates. It is strict so
// that no parser can see a target it missed: the first non-blank line must be
// "*** Begin Patch" and the last "*** End Patch"; a marker line is recognised even when
// indented; a line starting with "***" that is no known marker, a "Move to" outside an
// Update File section, an empty path, a path with surrounding whitespace or a NUL byte,
// and an envelope with no file operation are errors. Lines may end in "\r\n".
func PatchTargets(patch string) ([]string, error) {
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
	var targets []string
	seen := map[string]bool{}
	add := func(lineNo int, p string) error {
		switch {
		case p == "":
			return fmt.Errorf("patch line %d: empty path", lineNo)
		case strings.TrimSpace(p) != p:
			return fmt.Errorf("patch line %d: path %s has leading or trailing whitespace", lineNo, show(p))
		case strings.IndexByte(p, 0) >= 0:
			return fmt.Errorf("patch line %d: path contains a NUL byte", lineNo)
		}
		if !seen[p] {
			if len(targets) >= maxPatchTargets {
				return fmt.Errorf("patch names more than %d files", maxPatchTargets)
			}
			seen[p] = true
			targets = append(targets, p)
		}
		return nil
	}
	inUpdate := false
	for i := first + 1; i < last; i++ {
		l := lines[i]
		t := strings.TrimLeft(l, " \t")
		lineNo := i + 1
		if !strings.HasPrefix(t, "***") {
			continue
		}
		indented := t != l
		t = strings.TrimRight(t, " \t")
		var err error
		switch {
		case t == patchBegin || t == patchEnd:
			return nil, fmt.Errorf("patch line %d: unexpected %q", lineNo, t)
		case strings.HasPrefix(t+" ", patchAdd):
			inUpdate = false
			err = add(lineNo, markerPath(l, patchAdd))
		case strings.HasPrefix(t+" ", patchUpdate):
			inUpdate = true
			err = add(lineNo, markerPath(l, patchUpdate))
		case strings.HasPrefix(t+" ", patchDelete):
			inUpdate = false
			err = add(lineNo, markerPath(l, patchDelete))
		case strings.HasPrefix(t+" ", patchMove):
			if !inUpdate {
				return nil, fmt.Errorf("patch line %d: %q outside an Update File section", lineNo, strings.TrimSpace(patchMove))
			}
			err = add(lineNo, markerPath(l, patchMove))
		case t == patchEndOfFile:
		case indented:
			// Indented text such as a Markdown rule in a context line.
		default:
			return nil, fmt.Errorf("patch line %d: unknown marker %s", lineNo, show(Clip(t, msgClip)))
		}
		if err != nil {
			return nil, err
		}
	}
	if len(targets) == 0 {
		return nil, errors.New("patch has no file operations")
	}
	return targets, nil
}

// markerPath returns what follows marker on line l (leading indentation ignored). The
// marker's own trailing space is part of the marker; "*** Add File:" with nothing after
// it yields "".
func markerPath(l, marker string) string {
	t := strings.TrimLeft(l, " \t")
	if p, ok := strings.CutPrefix(t, marker); ok {
		return p
	}
	return ""
}
