package files

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/openprogram/openprogram/internal/clip"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/builtin/internal/tooldef"
	"github.com/openprogram/openprogram/runtime/tool"
)

const (
	defaultReadLines = 2000
	maxLineBytes     = 2000
)

type readArgs struct {
	Path   string `json:"path"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
}

var readSchema = tooldef.Object([]string{"path"},
	`"path": {"type": "string", "minLength": 1, "description": "File to read, absolute or relative to the working directory."}`,
	`"offset": {"type": "integer", "minimum": 1, "description": "First line to return (1-based). Default 1."}`,
	`"limit": {"type": "integer", "minimum": 1, "maximum": 100000, "description": "Number of lines to return. Default 2000."}`,
)

// open opens path, a target for reading, with flag and stats it; the
// caller closes f. The open goes through the target's root, which keeps it
// inside the working directory even if a symlink was swapped in after the
// check.
func (c *config) open(ctx context.Context, path string, flag int) (f *os.File, fi fs.FileInfo, shown string, err error) {
	root, t, shown, err := c.target(ctx, path, "")
	if err != nil {
		return nil, nil, "", err
	}
	defer root.Close()
	if f, err = root.OpenFile(t.Rel, flag, 0); err != nil {
		return nil, nil, "", statFailure(shown, err)
	}
	if fi, err = f.Stat(); err != nil {
		f.Close()
		return nil, nil, "", statFailure(shown, err)
	}
	return f, fi, shown, nil
}

func (c *config) readTool() tool.Tool {
	return tooldef.New("read",
		"Read a file inside the working directories. Text comes back with line numbers (like cat -n), from offset for limit lines; PNG, JPEG, GIF and WebP images come back as images; other binary files are refused.",
		readSchema, authz.CapFSRead, c.read)
}

func (c *config) read(ctx context.Context, _ string, a readArgs, _ func(string)) (tool.Result, error) {
	// O_NONBLOCK: opening a FIFO must not hang the call (a context cannot
	// interrupt open(2)).
	f, fi, shown, err := c.open(ctx, a.Path, os.O_RDONLY|syscall.O_NONBLOCK)
	if err != nil {
		return tool.Result{}, err
	}
	defer f.Close()
	if fi.IsDir() {
		return tool.Result{}, tooldef.Fail(ReasonIsDir, "%s is a directory; use list", shown)
	}
	if !fi.Mode().IsRegular() {
		return tool.Result{}, tooldef.Fail(ReasonBadPath, "%s is not a regular file", shown)
	}
	br := bufio.NewReaderSize(f, 64<<10)
	head, err := br.Peek(8 << 10)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return tool.Result{}, statFailure(shown, err)
	}
	if mt := imageType(head); mt != "" {
		if fi.Size() > c.maxImage {
			return tool.Result{}, tooldef.Fail(ReasonTooLarge, "%s is a %d byte image, over the %d byte limit", shown, fi.Size(), c.maxImage)
		}
		data, err := io.ReadAll(io.LimitReader(br, c.maxImage+1))
		if err != nil {
			return tool.Result{}, statFailure(shown, err)
		}
		return tool.Result{
			Content: []tool.Content{tool.Image(data, mt)},
			Details: map[string]any{"path": shown, "media_type": mt, "bytes": len(data)},
		}, nil
	}
	if isBinary(head) {
		return tool.Result{}, tooldef.Fail(ReasonBinary, "%s is a binary file", shown)
	}
	offset, limit := a.Offset, a.Limit
	if offset < 1 {
		offset = 1
	}
	if limit < 1 {
		limit = defaultReadLines
	}
	var out strings.Builder
	lineNo, shownLines := 0, 0
	more, cut := false, false
	for {
		if err := ctx.Err(); err != nil {
			return tool.Result{}, err
		}
		line, err := br.ReadString('\n')
		if line == "" && err != nil {
			if !errors.Is(err, io.EOF) {
				return tool.Result{}, statFailure(shown, err)
			}
			break
		}
		lineNo++
		if lineNo < offset {
			continue
		}
		if shownLines == limit || out.Len() >= c.maxOut {
			more = true
			cut = out.Len() >= c.maxOut && shownLines < limit
			break
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if len(line) > maxLineBytes {
			t, _ := clip.Middle(line, maxLineBytes)
			line = strings.ReplaceAll(t, "\n", " ")
		}
		fmt.Fprintf(&out, "%6d\t%s\n", lineNo, line)
		shownLines++
	}
	switch {
	case lineNo == 0:
		out.WriteString("[the file is empty]\n")
	case shownLines == 0:
		fmt.Fprintf(&out, "[offset %d is past the end of the file, which has %s]\n", offset, plural(lineNo, "line", "lines"))
	case more && cut:
		fmt.Fprintf(&out, "[output limit reached; continue with offset=%d]\n", offset+shownLines)
	case more:
		fmt.Fprintf(&out, "[more lines follow; continue with offset=%d]\n", offset+shownLines)
	}
	return tool.Result{
		Content: []tool.Content{tool.Text(out.String())},
		Details: map[string]any{"path": shown, "first_line": offset, "lines": shownLines, "more": more},
	}, nil
}

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

var writeSchema = tooldef.Object([]string{"path", "content"},
	`"path": {"type": "string", "minLength": 1, "description": "File to write, absolute or relative to the working directory. Missing parent directories are created."}`,
	`"content": {"type": "string", "description": "The complete new content of the file."}`,
)

func (c *config) writeTool() tool.Tool {
	return tooldef.New("write",
		"Create or overwrite a file inside the working directories with the given content (atomically: readers never see a half-written file).",
		writeSchema, authz.CapFSWrite, c.write)
}

func (c *config) write(ctx context.Context, _ string, a writeArgs, _ func(string)) (tool.Result, error) {
	dir, name, shown, err := c.targetDir(ctx, a.Path, "write", true)
	if err != nil {
		return tool.Result{}, err
	}
	defer dir.Close()
	perm := os.FileMode(0o644)
	created := true
	if fi, err := dir.Lstat(name); err == nil {
		switch {
		case fi.IsDir():
			return tool.Result{}, tooldef.Fail(ReasonIsDir, "%s is a directory", shown)
		case fi.Mode()&os.ModeSymlink != 0:
			return tool.Result{}, statFailure(shown, errChanged)
		case !fi.Mode().IsRegular():
			return tool.Result{}, tooldef.Fail(ReasonBadPath, "%s is not a regular file", shown)
		}
		perm, created = fi.Mode().Perm(), false
	} else if !errors.Is(err, fs.ErrNotExist) {
		return tool.Result{}, statFailure(shown, err)
	}
	if err := writeAtomic(dir, name, []byte(a.Content), perm); err != nil {
		return tool.Result{}, statFailure(shown, err)
	}
	verb := "updated"
	if created {
		verb = "created"
	}
	return tool.Result{
		Content: []tool.Content{tool.Text(fmt.Sprintf("%s %s (%s)", verb, shown, plural(len(a.Content), "byte", "bytes")))},
		Details: map[string]any{"path": shown, "bytes": len(a.Content), "created": created},
	}, nil
}

type editArgs struct {
	Path       string `json:"path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

var editSchema = tooldef.Object([]string{"path", "old_string", "new_string"},
	`"path": {"type": "string", "minLength": 1, "description": "File to edit, absolute or relative to the working directory."}`,
	`"old_string": {"type": "string", "minLength": 1, "description": "Exact text to replace. It must occur exactly once unless replace_all is true."}`,
	`"new_string": {"type": "string", "description": "Replacement text."}`,
	`"replace_all": {"type": "boolean", "description": "Replace every occurrence. Default false."}`,
)

func (c *config) editTool() tool.Tool {
	return tooldef.New("edit",
		"Replace exact text in a file inside the working directories. old_string must match exactly once, or set replace_all to replace every occurrence.",
		editSchema, authz.CapFSWrite, c.edit)
}

func (c *config) edit(ctx context.Context, _ string, a editArgs, _ func(string)) (tool.Result, error) {
	if a.OldString == a.NewString {
		return tool.Result{}, tooldef.Fail(ReasonNoMatch, "old_string and new_string are identical; nothing to change")
	}
	dir, name, shown, err := c.targetDir(ctx, a.Path, "edit", false)
	if err != nil {
		return tool.Result{}, err
	}
	defer dir.Close()
	data, perm, err := c.readTextFile(dir, name, shown)
	if err != nil {
		return tool.Result{}, err
	}
	text := string(data)
	n := strings.Count(text, a.OldString)
	switch {
	case n == 0:
		return tool.Result{}, tooldef.Fail(ReasonNoMatch, "old_string was not found in %s; read the file and copy the text exactly", shown)
	case n > 1 && !a.ReplaceAll:
		return tool.Result{}, tooldef.Fail(ReasonAmbiguous, "old_string occurs %d times in %s; add surrounding context to make it unique or set replace_all", n, shown)
	}
	if a.ReplaceAll {
		text = strings.ReplaceAll(text, a.OldString, a.NewString)
	} else {
		text = strings.Replace(text, a.OldString, a.NewString, 1)
	}
	if err := writeAtomic(dir, name, []byte(text), perm); err != nil {
		return tool.Result{}, statFailure(shown, err)
	}
	return tool.Result{
		Content: []tool.Content{tool.Text(fmt.Sprintf("edited %s: replaced %s", shown, plural(n, "occurrence", "occurrences")))},
		Details: map[string]any{"path": shown, "replacements": n},
	}, nil
}

type listArgs struct {
	Path string `json:"path"`
}

var listSchema = tooldef.Object(nil,
	`"path": {"type": "string", "description": "Directory to list, absolute or relative to the working directory. Default: the working directory."}`,
)

func (c *config) listTool() tool.Tool {
	return tooldef.New("list",
		"List a directory inside the working directories: one entry per line, sorted, directories ending in /, symbolic links in @.",
		listSchema, authz.CapFSRead, c.list)
}

func (c *config) list(ctx context.Context, _ string, a listArgs, _ func(string)) (tool.Result, error) {
	f, fi, shown, err := c.open(ctx, a.Path, os.O_RDONLY)
	if err != nil {
		return tool.Result{}, err
	}
	defer f.Close()
	if !fi.IsDir() {
		return tool.Result{}, tooldef.Fail(ReasonNotDir, "%s is not a directory; use read", shown)
	}
	entries, err := f.ReadDir(-1)
	if err != nil {
		return tool.Result{}, statFailure(shown, err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		name := e.Name()
		switch {
		case e.Type()&os.ModeSymlink != 0:
			name += "@"
		case e.IsDir():
			name += "/"
		}
		names = append(names, name)
	}
	slices.Sort(names)
	total := len(names)
	var out strings.Builder
	n := 0
	for _, name := range names {
		if n == c.maxResult || out.Len()+len(name)+1 > c.maxOut {
			break
		}
		out.WriteString(name)
		out.WriteByte('\n')
		n++
	}
	if total == 0 {
		out.WriteString("[the directory is empty]\n")
	} else if n < total {
		fmt.Fprintf(&out, "[%d more entries not shown]\n", total-n)
	}
	return tool.Result{
		Content: []tool.Content{tool.Text(out.String())},
		Details: map[string]any{"path": shown, "entries": total, "shown": n},
	}, nil
}

// target confines path to the call's scope (for a write by the tool writer,
// with the write checks; "" for a read) and opens the root of the working
// directory that holds it: the caller closes the root. shown is how to
// show the path to the model.
func (c *config) target(ctx context.Context, path, writer string) (root *os.Root, t authz.Target, shown string, err error) {
	sc, err := c.scope(ctx)
	if err != nil {
		return nil, authz.Target{}, "", err
	}
	return sc.open(path, writer)
}

// open is target in a scope already made.
func (s scope) open(path, writer string) (root *os.Root, t authz.Target, shown string, err error) {
	if t, err = s.confine(path, writer); err != nil {
		return nil, authz.Target{}, "", err
	}
	shown = s.display(t.Resolved)
	if root, err = os.OpenRoot(t.WorkDir); err != nil {
		return nil, authz.Target{}, "", statFailure(shown, err)
	}
	return root, t, shown, nil
}

// targetDir confines path for a write by the tool writer and opens the
// directory that holds it with openDir (creating missing directories with
// create): the caller writes name in dir and closes dir.
func (c *config) targetDir(ctx context.Context, path, writer string, create bool) (dir *os.Root, name, shown string, err error) {
	root, t, shown, err := c.target(ctx, path, writer)
	if err != nil {
		return nil, "", "", err
	}
	defer root.Close()
	if dir, name, err = openParent(root, t.Rel, create); err != nil {
		return nil, "", "", statFailure(shown, err)
	}
	return dir, name, shown, nil
}
