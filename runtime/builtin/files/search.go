package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/openprogram/openprogram/internal/clip"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/builtin/internal/tooldef"
	"github.com/openprogram/openprogram/runtime/tool"
)

// maxDoubleStars bounds "**" segments so matching stays cheap.
const maxDoubleStars = 8

// globPattern is a parsed slash-separated pattern; "**" matches any
// number of path segments, every other segment is a path.Match pattern.
type globPattern []string

func parseGlob(p string) (globPattern, error) {
	p = filepath.ToSlash(p)
	if p == "" {
		return nil, errors.New("pattern is empty")
	}
	if strings.HasPrefix(p, "/") {
		return nil, errors.New("pattern must be relative; give the directory as path")
	}
	for strings.HasPrefix(p, "./") {
		p = p[2:]
	}
	var segs globPattern
	stars := 0
	for _, s := range strings.Split(p, "/") {
		switch {
		case s == "" || s == ".":
			continue
		case s == "..":
			return nil, errors.New(`pattern must not contain ".."`)
		case s == "**":
			stars++
			if stars > maxDoubleStars {
				return nil, fmt.Errorf("pattern has more than %d ** segments", maxDoubleStars)
			}
			if len(segs) > 0 && segs[len(segs)-1] == "**" {
				continue
			}
		default:
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("bad pattern segment %q: %v", s, err)
			}
		}
		segs = append(segs, s)
	}
	if len(segs) == 0 {
		return nil, errors.New("pattern is empty")
	}
	return segs, nil
}

// match reports whether the slash-separated relative path matches.
func (g globPattern) match(rel string) bool {
	return matchSegs(g, strings.Split(rel, "/"))
}

func matchSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			if len(pat) == 1 {
				return true
			}
			for i := 0; i <= len(name); i++ {
				if matchSegs(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// mayContain reports whether files under directory rel can match, so
// walks skip subtrees the pattern cannot reach.
func (g globPattern) mayContain(rel string) bool {
	pat := []string(g)
	for _, s := range strings.Split(rel, "/") {
		if len(pat) == 0 {
			return false
		}
		if pat[0] == "**" {
			return true
		}
		if ok, _ := path.Match(pat[0], s); !ok {
			return false
		}
		pat = pat[1:]
	}
	return len(pat) > 0
}

// errStop ends a walk early once enough results are found.
var errStop = errors.New("stop walk")

// walkFiles calls fn for every non-directory entry under the directory
// dir of fsys (an os.Root's FS, so the walk cannot leave its working
// directory), in lexical order, skipping .git directories and subtrees
// prune rejects. fn gets the entry's path in fsys and its path relative
// to dir (both slash-separated).
func walkFiles(ctx context.Context, fsys fs.FS, dir string, prune func(rel string) bool, fn func(p, rel string, d fs.DirEntry) error) error {
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if p == dir {
				return err
			}
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if p == dir {
			return nil
		}
		rel := p
		if dir != "." {
			rel = strings.TrimPrefix(p, dir+"/")
		}
		if d.IsDir() {
			if d.Name() == ".git" || (prune != nil && prune(rel)) {
				return fs.SkipDir
			}
			return nil
		}
		return fn(p, rel, d)
	})
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// walkFailure is the error of a walk of shown that failed: the context's
// when it ended the walk.
func walkFailure(ctx context.Context, shown string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return statFailure(shown, err)
}

type globArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
}

var globSchema = tooldef.Object([]string{"pattern"},
	`"pattern": {"type": "string", "minLength": 1, "description": "Slash-separated glob relative to path, e.g. **/*.go; ** matches any number of directories, * ? [...] match within one name."}`,
	`"path": {"type": "string", "description": "Directory to search, absolute or relative to the working directory. Default: the working directory."}`,
)

func (c *config) globTool() tool.Tool {
	return tooldef.New("glob",
		"Find files by glob pattern (with ** for any depth) under a directory inside the working directories. Returns matching file paths, sorted; .git directories are skipped.",
		globSchema, authz.CapFSRead, c.glob)
}

func (c *config) glob(ctx context.Context, _ string, a globArgs, _ func(string)) (tool.Result, error) {
	sc, err := c.scope(ctx)
	if err != nil {
		return tool.Result{}, err
	}
	g, err := parseGlob(a.Pattern)
	if err != nil {
		return tool.Result{}, tooldef.Fail(ReasonBadPattern, "glob: %v", err)
	}
	root, t, shown, err := sc.open(a.Path, "")
	if err != nil {
		return tool.Result{}, err
	}
	defer root.Close()
	dir := filepath.ToSlash(t.Rel)
	if fi, err := root.Stat(t.Rel); err != nil {
		return tool.Result{}, statFailure(shown, err)
	} else if !fi.IsDir() {
		return tool.Result{}, tooldef.Fail(ReasonNotDir, "%s is not a directory", shown)
	}
	var out strings.Builder
	n, more := 0, false
	err = walkFiles(ctx, root.FS(), dir, func(rel string) bool { return !g.mayContain(rel) }, func(p, rel string, _ fs.DirEntry) error {
		if !g.match(rel) {
			return nil
		}
		line := sc.display(filepath.Join(t.WorkDir, filepath.FromSlash(p)))
		if n == c.maxResult || out.Len()+len(line)+1 > c.maxOut {
			more = true
			return errStop
		}
		out.WriteString(line)
		out.WriteByte('\n')
		n++
		return nil
	})
	if err != nil {
		return tool.Result{}, walkFailure(ctx, shown, err)
	}
	if n == 0 {
		out.WriteString("[no files match]\n")
	} else if more {
		fmt.Fprintf(&out, "[more than %d files match; narrow the pattern]\n", n)
	}
	return tool.Result{
		Content: []tool.Content{tool.Text(out.String())},
		Details: map[string]any{"matches": n, "more": more},
	}, nil
}

// Output modes of grep.
const (
	modeContent = "content"
	modeFiles   = "files_with_matches"
	modeCount   = "count"
)

const (
	defaultGrepResults = 200
	maxGrepLineBytes   = 500
)

type grepArgs struct {
	Pattern         string `json:"pattern"`
	Path            string `json:"path"`
	Glob            string `json:"glob"`
	OutputMode      string `json:"output_mode"`
	CaseInsensitive bool   `json:"case_insensitive"`
	MaxResults      int    `json:"max_results"`
}

var grepSchema = tooldef.Object([]string{"pattern"},
	`"pattern": {"type": "string", "minLength": 1, "description": "Regular expression (RE2 syntax) searched line by line."}`,
	`"path": {"type": "string", "description": "File or directory to search, absolute or relative to the working directory. Default: the working directory."}`,
	`"glob": {"type": "string", "description": "Only search files matching this glob: a name pattern like *.go, or a path pattern like src/**/*.ts."}`,
	`"output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"], "description": "content: path:line:text lines; files_with_matches (default): matching file paths; count: path:count lines."}`,
	`"case_insensitive": {"type": "boolean", "description": "Match without regard to case. Default false."}`,
	`"max_results": {"type": "integer", "minimum": 1, "maximum": 10000, "description": "Maximum lines (content) or files (other modes). Default 200."}`,
)

func (c *config) grepTool() tool.Tool {
	return tooldef.New("grep",
		"Search file contents with a regular expression (RE2) under a file or directory inside the working directories. Binary files, files over the size limit and .git directories are skipped.",
		grepSchema, authz.CapFSRead, c.grep)
}

func (c *config) grep(ctx context.Context, _ string, a grepArgs, _ func(string)) (tool.Result, error) {
	sc, err := c.scope(ctx)
	if err != nil {
		return tool.Result{}, err
	}
	expr := a.Pattern
	if a.CaseInsensitive {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return tool.Result{}, tooldef.Fail(ReasonBadPattern, "grep: invalid regular expression: %v", err)
	}
	var filter func(rel string) bool
	if a.Glob != "" {
		g, err := parseGlob(a.Glob)
		if err != nil {
			return tool.Result{}, tooldef.Fail(ReasonBadPattern, "grep glob: %v", err)
		}
		if len(g) == 1 && g[0] != "**" {
			filter = func(rel string) bool { ok, _ := path.Match(g[0], path.Base(rel)); return ok }
		} else {
			filter = g.match
		}
	}
	mode := a.OutputMode
	if mode == "" {
		mode = modeFiles
	}
	limit := a.MaxResults
	if limit <= 0 {
		limit = defaultGrepResults
	}
	root, t, shownRoot, err := sc.open(a.Path, "")
	if err != nil {
		return tool.Result{}, err
	}
	defer root.Close()
	fi, err := root.Stat(t.Rel)
	if err != nil {
		return tool.Result{}, statFailure(shownRoot, err)
	}

	var out strings.Builder
	results, files, matches := 0, 0, 0
	more := false
	emit := func(line string) bool {
		if results == limit || out.Len()+len(line)+1 > c.maxOut {
			more = true
			return false
		}
		out.WriteString(line)
		out.WriteByte('\n')
		results++
		return true
	}
	search := func(p string) error {
		data, ok := c.grepReadable(root, p)
		if !ok || !re.Match(data) {
			return nil
		}
		shown := sc.display(filepath.Join(t.WorkDir, p))
		files++
		if mode == modeFiles {
			matches++
			if !emit(shown) {
				return errStop
			}
			return nil
		}
		count := 0
		lineNo := 0
		for len(data) > 0 {
			lineNo++
			line := data
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				line, data = data[:i], data[i+1:]
			} else {
				data = nil
			}
			line = bytes.TrimSuffix(line, []byte("\r"))
			if !re.Match(line) {
				continue
			}
			count++
			matches++
			if mode == modeContent {
				text, _ := clip.Middle(string(line), maxGrepLineBytes)
				if !emit(fmt.Sprintf("%s:%d:%s", shown, lineNo, strings.ReplaceAll(text, "\n", " "))) {
					return errStop
				}
			}
		}
		if mode == modeCount && !emit(fmt.Sprintf("%s:%d", shown, count)) {
			return errStop
		}
		return nil
	}
	if fi.IsDir() {
		err = walkFiles(ctx, root.FS(), filepath.ToSlash(t.Rel), nil, func(p, rel string, _ fs.DirEntry) error {
			if filter != nil && !filter(rel) {
				return nil
			}
			return search(filepath.FromSlash(p))
		})
	} else {
		err = search(t.Rel)
		if errors.Is(err, errStop) {
			err = nil
		}
	}
	if err != nil {
		return tool.Result{}, walkFailure(ctx, shownRoot, err)
	}
	if results == 0 {
		out.WriteString("[no matches]\n")
	} else if more {
		out.WriteString("[result limit reached; narrow the search or raise max_results]\n")
	}
	return tool.Result{
		Content: []tool.Content{tool.Text(out.String())},
		Details: map[string]any{"mode": mode, "files": files, "matches": matches, "more": more},
	}, nil
}

// grepReadable returns the content of p (relative to root) when it is a
// regular text file within the size limit. The root follows a symlink only
// to a target inside its working directory; O_NONBLOCK keeps a FIFO from
// hanging the open.
func (c *config) grepReadable(root *os.Root, p string) ([]byte, bool) {
	f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > c.maxFile {
		return nil, false
	}
	data, err := io.ReadAll(io.LimitReader(f, c.maxFile+1))
	if err != nil || int64(len(data)) > c.maxFile || isBinary(data) {
		return nil, false
	}
	return data, true
}
