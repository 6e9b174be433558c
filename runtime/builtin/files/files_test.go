package files_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/internal/wine"
	"github.com/openprogram/openprogram/runtime/builtin/files"
	"github.com/openprogram/openprogram/runtime/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type env struct {
	t    *testing.T
	work string
	reg  *tool.Registry
	ex   *tool.Executor
	ctx  context.Context
}

func newEnv(t *testing.T, opts *files.Options) *env {
	t.Helper()
	work, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o := files.Options{}
	if opts != nil {
		o = *opts
	}
	o.WorkDirs = []string{work}
	reg := tool.NewRegistry()
	for _, tl := range files.Tools(&o) {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	return &env{t: t, work: work, reg: reg, ex: tool.NewExecutor(nil), ctx: context.Background()}
}

func (e *env) call(name string, args any) tool.Result {
	e.t.Helper()
	tl, ok := e.reg.Get(name)
	if !ok {
		e.t.Fatalf("no tool %s", name)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.ex.Execute(e.ctx, tl, "call", raw, nil)
}

func (e *env) write(rel, content string) string {
	e.t.Helper()
	p := filepath.Join(e.work, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) read(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.work, rel))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

func wantOK(t *testing.T, res tool.Result) {
	t.Helper()
	if res.IsError {
		t.Fatalf("result IsError: %s (%v)", res.Text(), res.Details)
	}
}

func wantErr(t *testing.T, res tool.Result, reason string) {
	t.Helper()
	if !res.IsError || res.ReasonCode() != reason {
		t.Fatalf("result = IsError %v reason %q text %q, want reason %s", res.IsError, res.ReasonCode(), res.Text(), reason)
	}
}

func TestToolsOrderAndCapabilities(t *testing.T) {
	var names []string
	for _, tl := range files.Tools(nil) {
		names = append(names, tl.Name())
		if tl.Capability() != authz.ToolCapability(tl.Name()) {
			t.Errorf("%s declares %s, the authz table says %s", tl.Name(), tl.Capability(), authz.ToolCapability(tl.Name()))
		}
	}
	if diff := cmp.Diff([]string{"read", "write", "edit", "apply_patch", "glob", "grep", "list"}, names); diff != "" {
		t.Errorf("Tools() names (-want +got):\n%s", diff)
	}
}

func TestReadNumbersLinesWithOffsetAndLimit(t *testing.T) {
	e := newEnv(t, nil)
	e.write("f.txt", "one\ntwo\r\nthree\nfour\n")
	res := e.call("read", map[string]any{"path": "f.txt"})
	wantOK(t, res)
	if diff := cmp.Diff("     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n", res.Text()); diff != "" {
		t.Errorf("read mismatch (-want +got):\n%s", diff)
	}
	res = e.call("read", map[string]any{"path": filepath.Join(e.work, "f.txt"), "offset": 2, "limit": 2})
	wantOK(t, res)
	if diff := cmp.Diff("     2\ttwo\n     3\tthree\n[more lines follow; continue with offset=4]\n", res.Text()); diff != "" {
		t.Errorf("read offset/limit mismatch (-want +got):\n%s", diff)
	}
	res = e.call("read", map[string]any{"path": "f.txt", "offset": 9})
	wantOK(t, res)
	if !strings.Contains(res.Text(), "past the end of the file, which has 4 lines") {
		t.Errorf("read past end = %q", res.Text())
	}
	e.write("empty", "")
	if res := e.call("read", map[string]any{"path": "empty"}); res.Text() != "[the file is empty]\n" {
		t.Errorf("read empty = %q", res.Text())
	}
	e.write("nonl", "last line without newline")
	if res := e.call("read", map[string]any{"path": "nonl"}); res.Text() != "     1\tlast line without newline\n" {
		t.Errorf("read without trailing newline = %q", res.Text())
	}
}

func TestReadLongLinesAndOutputLimit(t *testing.T) {
	e := newEnv(t, &files.Options{MaxOutputBytes: 100})
	e.write("long", strings.Repeat("x", 5000)+"\n")
	res := e.call("read", map[string]any{"path": "long"})
	wantOK(t, res)
	if len(res.Text()) > 2200 || !strings.Contains(res.Text(), "truncated") {
		t.Errorf("long line not truncated: %d bytes", len(res.Text()))
	}
	var b strings.Builder
	for range 50 {
		b.WriteString("0123456789\n")
	}
	e.write("many", b.String())
	res = e.call("read", map[string]any{"path": "many"})
	if !strings.Contains(res.Text(), "[output limit reached; continue with offset=") {
		t.Errorf("output limit note missing: %q", res.Text())
	}
}

func TestReadBinaryAndImages(t *testing.T) {
	e := newEnv(t, nil)
	e.write("bin", "abc\x00def")
	wantErr(t, e.call("read", map[string]any{"path": "bin"}), files.ReasonBinary)

	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR rest"
	e.write("pic.dat", png)
	res := e.call("read", map[string]any{"path": "pic.dat"})
	wantOK(t, res)
	if len(res.Content) != 1 || res.Content[0].Type != tool.TypeImage || res.Content[0].MediaType != "image/png" || string(res.Content[0].Data) != png {
		t.Errorf("read png = %+v, want one image/png block with the bytes", res.Content)
	}
	for name, data := range map[string]string{"j": "\xff\xd8\xff\xe0rest", "g": "GIF89a....", "w": "RIFF\x10\x00\x00\x00WEBPVP8 "} {
		e.write(name, data)
		if res := e.call("read", map[string]any{"path": name}); len(res.Content) != 1 || res.Content[0].Type != tool.TypeImage {
			t.Errorf("read %s = %+v, want an image", name, res.Content)
		}
	}
	big := newEnv(t, &files.Options{MaxImageBytes: 10})
	big.write("p.png", png)
	wantErr(t, big.call("read", map[string]any{"path": "p.png"}), files.ReasonTooLarge)
}

func TestReadRefusesOutsideWorkDirs(t *testing.T) {
	e := newEnv(t, nil)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	refused := []string{secret, "../" + filepath.Base(outside) + "/secret", filepath.Join(fsRoot, "x")}
	// The rows through a symlink run where the system makes one.
	if symlink(t, secret, filepath.Join(e.work, "link")) {
		refused = append(refused, "link")
	}
	if symlink(t, outside, filepath.Join(e.work, "dirlink")) {
		refused = append(refused, "dirlink/secret")
	}
	if unixPaths {
		refused = append(refused, "/etc/passwd")
	}
	for _, p := range refused {
		res := e.call("read", map[string]any{"path": p})
		wantErr(t, res, files.ReasonOutsideWorkDir)
		if strings.Contains(res.Text(), "s3cret") {
			t.Errorf("read %s leaked content", p)
		}
	}
	wantErr(t, e.call("read", map[string]any{"path": "missing"}), files.ReasonNotFound)
	wantErr(t, e.call("read", map[string]any{"path": "."}), files.ReasonIsDir)
}

func TestCallWorkDirsOverrideAndMissing(t *testing.T) {
	e := newEnv(t, nil)
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "o.txt"), []byte("other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := authz.NewMCPClient("0123456789abcdef", "owner/install/fedcba9876543210", authz.Scope{WorkDirs: []string{other}})
	if err != nil {
		t.Fatal(err)
	}
	e.ctx = tool.WithCall(context.Background(), tool.CallInfo{Speaker: sp})
	wantOK(t, e.call("read", map[string]any{"path": "o.txt"}))
	e.write("w.txt", "x")
	wantErr(t, e.call("read", map[string]any{"path": filepath.Join(e.work, "w.txt")}), files.ReasonOutsideWorkDir)

	none := tool.NewRegistry()
	for _, tl := range files.Tools(nil) {
		_ = none.Register(tl)
	}
	rd, _ := none.Get("read")
	res := tool.NewExecutor(nil).Execute(context.Background(), rd, "c", json.RawMessage(`{"path":"x"}`), nil)
	wantErr(t, res, files.ReasonNoWorkDir)
}

func TestWrite(t *testing.T) {
	e := newEnv(t, nil)
	res := e.call("write", map[string]any{"path": "a/b/c.txt", "content": "hello\n"})
	wantOK(t, res)
	if got := e.read("a/b/c.txt"); got != "hello\n" {
		t.Errorf("content = %q", got)
	}
	if res.Details["created"] != true || res.Text() != "created a/b/c.txt (6 bytes)" {
		t.Errorf("write result = %q %v", res.Text(), res.Details)
	}
	p := e.write("exec.sh", "old")
	if err := os.Chmod(p, 0o750); err != nil {
		t.Fatal(err)
	}
	wantOK(t, e.call("write", map[string]any{"path": "exec.sh", "content": "new"}))
	if e.read("exec.sh") != "new" {
		t.Errorf("overwrite: content %q, want new", e.read("exec.sh"))
	}
	wantPerm(t, p, 0o750)
	wantErr(t, e.call("write", map[string]any{"path": "a", "content": "x"}), files.ReasonIsDir)
	outside := t.TempDir()
	wantErr(t, e.call("write", map[string]any{"path": filepath.Join(outside, "x"), "content": "x"}), files.ReasonOutsideWorkDir)
	if _, err := os.Stat(filepath.Join(outside, "x")); err == nil {
		t.Errorf("write outside created the file")
	}
	assertNoTempFiles(t, e.work)
}

func TestEdit(t *testing.T) {
	e := newEnv(t, nil)
	e.write("f.go", "a := 1\nb := 1\nc := 2\n")
	wantErr(t, e.call("edit", map[string]any{"path": "f.go", "old_string": ":= 1", "new_string": ":= 3"}), files.ReasonAmbiguous)
	if e.read("f.go") != "a := 1\nb := 1\nc := 2\n" {
		t.Fatalf("an ambiguous edit changed the file")
	}
	wantOK(t, e.call("edit", map[string]any{"path": "f.go", "old_string": "b := 1", "new_string": "b := 9"}))
	if got := e.read("f.go"); got != "a := 1\nb := 9\nc := 2\n" {
		t.Errorf("after edit = %q", got)
	}
	res := e.call("edit", map[string]any{"path": "f.go", "old_string": " := ", "new_string": " = ", "replace_all": true})
	wantOK(t, res)
	if got := e.read("f.go"); got != "a = 1\nb = 9\nc = 2\n" || res.Details["replacements"] != 3 {
		t.Errorf("after replace_all = %q (%v)", got, res.Details)
	}
	wantErr(t, e.call("edit", map[string]any{"path": "f.go", "old_string": "zzz", "new_string": "y"}), files.ReasonNoMatch)
	wantErr(t, e.call("edit", map[string]any{"path": "f.go", "old_string": "a", "new_string": "a"}), files.ReasonNoMatch)
	wantErr(t, e.call("edit", map[string]any{"path": "f.go", "old_string": "", "new_string": "a"}), tool.ReasonInvalidArguments)
	e.write("bin", "\x00\x01")
	wantErr(t, e.call("edit", map[string]any{"path": "bin", "old_string": "\x01", "new_string": "b"}), files.ReasonBinary)
	wantErr(t, e.call("edit", map[string]any{"path": "nope", "old_string": "a", "new_string": "b"}), files.ReasonNotFound)
	assertNoTempFiles(t, e.work)
}

func TestList(t *testing.T) {
	e := newEnv(t, &files.Options{MaxResults: 3})
	e.write("b.txt", "")
	e.write("a/x", "")
	e.write("c", "")
	if wine.Detected() {
		// Wine makes no symlinks: a fourth entry all the same.
		e.write("d", "")
	} else if err := os.Symlink("b.txt", filepath.Join(e.work, "d")); err != nil {
		t.Fatal(err)
	}
	res := e.call("list", map[string]any{})
	wantOK(t, res)
	if diff := cmp.Diff("a/\nb.txt\nc\n[1 more entries not shown]\n", res.Text()); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
	full := newEnv(t, nil)
	full.write("sub/one", "")
	full.write("sub/two/x", "")
	if diff := cmp.Diff("one\ntwo/\n", full.call("list", map[string]any{"path": "sub"}).Text()); diff != "" {
		t.Errorf("list sub (-want +got):\n%s", diff)
	}
	if err := os.Mkdir(filepath.Join(full.work, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := full.call("list", map[string]any{"path": "empty"}).Text(); got != "[the directory is empty]\n" {
		t.Errorf("list empty = %q", got)
	}
	wantErr(t, full.call("list", map[string]any{"path": "sub/one"}), files.ReasonNotDir)
	wantErr(t, full.call("list", map[string]any{"path": fsRoot}), files.ReasonOutsideWorkDir)
}

func TestGlob(t *testing.T) {
	e := newEnv(t, nil)
	for _, f := range []string{"main.go", "README.md", "pkg/a.go", "pkg/a_test.go", "pkg/deep/b.go", "pkg/deep/c.txt", ".git/x.go", "vendor/v.go"} {
		e.write(f, "")
	}
	cases := map[string]struct {
		args map[string]any
		want string
	}{
		"any depth":   {map[string]any{"pattern": "**/*.go"}, "main.go\npkg/a.go\npkg/a_test.go\npkg/deep/b.go\nvendor/v.go\n"},
		"top level":   {map[string]any{"pattern": "*.go"}, "main.go\n"},
		"under dir":   {map[string]any{"pattern": "pkg/**"}, "pkg/a.go\npkg/a_test.go\npkg/deep/b.go\npkg/deep/c.txt\n"},
		"middle star": {map[string]any{"pattern": "pkg/**/*.txt"}, "pkg/deep/c.txt\n"},
		"class":       {map[string]any{"pattern": "pkg/a_[t]est.go"}, "pkg/a_test.go\n"},
		"with path":   {map[string]any{"pattern": "*.go", "path": "pkg/deep"}, "pkg/deep/b.go\n"},
		"no match":    {map[string]any{"pattern": "**/*.rs"}, "[no files match]\n"},
	}
	for name, c := range cases {
		res := e.call("glob", c.args)
		wantOK(t, res)
		if diff := cmp.Diff(c.want, res.Text()); diff != "" {
			t.Errorf("glob %s (-want +got):\n%s", name, diff)
		}
	}
	for _, bad := range []string{"/etc/*", "../*", "[", "**/[a"} {
		wantErr(t, e.call("glob", map[string]any{"pattern": bad}), files.ReasonBadPattern)
	}
	wantErr(t, e.call("glob", map[string]any{"pattern": "*", "path": ".."}), files.ReasonOutsideWorkDir)
	limited := newEnv(t, &files.Options{MaxResults: 2})
	for _, f := range []string{"1", "2", "3"} {
		limited.write(f, "")
	}
	if got := limited.call("glob", map[string]any{"pattern": "*"}).Text(); got != "1\n2\n[more than 2 files match; narrow the pattern]\n" {
		t.Errorf("glob limit = %q", got)
	}
}

func TestGrep(t *testing.T) {
	e := newEnv(t, nil)
	e.write("a.go", "package a\nfunc Foo() {}\n// foo\n")
	e.write("b/b.go", "package b\nvar x = Foo()\n")
	e.write("b/notes.txt", "Foo in text\n")
	e.write("bin.dat", "Foo\x00binary")
	e.write(".git/HEAD", "Foo\n")
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.go"), []byte("Foo secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.go"), filepath.Join(e.work, "leak.go")); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		args map[string]any
		want string
	}{
		"files default": {map[string]any{"pattern": "Foo"}, "a.go\nb/b.go\nb/notes.txt\n"},
		"content": {map[string]any{"pattern": `Foo\(`, "output_mode": "content"},
			"a.go:2:func Foo() {}\nb/b.go:2:var x = Foo()\n"},
		"case insensitive count": {map[string]any{"pattern": "foo", "case_insensitive": true, "output_mode": "count"},
			"a.go:2\nb/b.go:1\nb/notes.txt:1\n"},
		"glob name filter": {map[string]any{"pattern": "Foo", "glob": "*.txt"}, "b/notes.txt\n"},
		"glob path filter": {map[string]any{"pattern": "package", "glob": "b/**/*.go"}, "b/b.go\n"},
		"single file":      {map[string]any{"pattern": "package", "path": "b/b.go", "output_mode": "content"}, "b/b.go:1:package b\n"},
		"subdir":           {map[string]any{"pattern": "Foo", "path": "b"}, "b/b.go\nb/notes.txt\n"},
		"limit":            {map[string]any{"pattern": ".", "output_mode": "content", "max_results": 2}, "a.go:1:package a\na.go:2:func Foo() {}\n[result limit reached; narrow the search or raise max_results]\n"},
		"no match":         {map[string]any{"pattern": "Bar"}, "[no matches]\n"},
	}
	for name, c := range cases {
		res := e.call("grep", c.args)
		wantOK(t, res)
		if diff := cmp.Diff(c.want, res.Text()); diff != "" {
			t.Errorf("grep %s (-want +got):\n%s", name, diff)
		}
	}
	wantErr(t, e.call("grep", map[string]any{"pattern": "("}), files.ReasonBadPattern)
	wantErr(t, e.call("grep", map[string]any{"pattern": "x", "output_mode": "lines"}), tool.ReasonInvalidArguments)
	wantErr(t, e.call("grep", map[string]any{"pattern": "x", "path": outside}), files.ReasonOutsideWorkDir)
}

func TestApplyPatchAddUpdateDeleteMove(t *testing.T) {
	e := newEnv(t, nil)
	e.write("src/main.go", "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n\nfunc other() {\n\treturn\n}\n")
	e.write("old.txt", "bye\n")
	e.write("mv/from.txt", "line1\nline2\n")
	if err := os.Chmod(filepath.Join(e.work, "mv/from.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	patch := `*** Begin Patch
*** Add File: docs/new.md
+# Title
+
+body
*** Update File: src/main.go
@@ func main() {
-	fmt.Println("hi")
+	fmt.Println("hello")
@@ func other() {
-	return
+	return // done
*** Delete File: old.txt
*** Update File: mv/from.txt
*** Move to: mv/to.txt
@@
 line1
-line2
+line two
*** End of File
*** End Patch
`
	res := e.call("apply_patch", map[string]any{"patch": patch})
	wantOK(t, res)
	if diff := cmp.Diff("applied patch:\nA docs/new.md\nM src/main.go\nD old.txt\nR mv/from.txt -> mv/to.txt", res.Text()); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	if got := e.read("docs/new.md"); got != "# Title\n\nbody\n" {
		t.Errorf("added file = %q", got)
	}
	if got := e.read("src/main.go"); got != "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello\")\n}\n\nfunc other() {\n\treturn // done\n}\n" {
		t.Errorf("updated file = %q", got)
	}
	if _, err := os.Stat(filepath.Join(e.work, "old.txt")); !os.IsNotExist(err) {
		t.Errorf("deleted file still exists: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.work, "mv/from.txt")); !os.IsNotExist(err) {
		t.Errorf("move source still exists: %v", err)
	}
	if got := e.read("mv/to.txt"); got != "line1\nline two\n" {
		t.Errorf("moved file = %q", got)
	}
	wantPerm(t, filepath.Join(e.work, "mv/to.txt"), 0o600)
	assertNoTempFiles(t, e.work)
}

func TestApplyPatchIsAllOrNothing(t *testing.T) {
	e := newEnv(t, nil)
	e.write("a.txt", "alpha\nbeta\n")
	e.write("b.txt", "gamma\n")
	e.write("exists.txt", "here\n")
	snapshot := func() map[string]string {
		out := map[string]string{}
		_ = filepath.Walk(e.work, func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				b, _ := os.ReadFile(p)
				out[p] = string(b)
			}
			return nil
		})
		return out
	}
	before := snapshot()
	cases := map[string]struct {
		patch  string
		reason string
	}{
		"second hunk misses": {`*** Begin Patch
*** Update File: a.txt
-alpha
+ALPHA
*** Update File: b.txt
-no such line
+x
*** End Patch`, files.ReasonNoMatch},
		"add over existing": {`*** Begin Patch
*** Add File: new.txt
+n
*** Add File: exists.txt
+x
*** End Patch`, files.ReasonExists},
		"delete missing": {`*** Begin Patch
*** Update File: a.txt
-alpha
+ALPHA
*** Delete File: missing.txt
*** End Patch`, files.ReasonNotFound},
		"outside": {`*** Begin Patch
*** Add File: inside.txt
+x
*** Add File: ../escape.txt
+x
*** End Patch`, files.ReasonOutsideWorkDir},
		"same file twice": {`*** Begin Patch
*** Update File: a.txt
-alpha
+A
*** Update File: ./a.txt
-beta
+B
*** End Patch`, files.ReasonBadPatch},
		"move onto existing": {`*** Begin Patch
*** Update File: a.txt
*** Move to: b.txt
*** End Patch`, files.ReasonExists},
		"eof anchor misses": {`*** Begin Patch
*** Update File: a.txt
-alpha
+A
*** End of File
*** End Patch`, files.ReasonNoMatch},
		"no envelope":  {"*** Update File: a.txt\n-alpha\n+A\n", files.ReasonBadPatch},
		"bad line":     {"*** Begin Patch\n*** Update File: a.txt\nalpha\n*** End Patch", files.ReasonBadPatch},
		"empty update": {"*** Begin Patch\n*** Update File: a.txt\n*** End Patch", files.ReasonBadPatch},
	}
	for name, c := range cases {
		res := e.call("apply_patch", map[string]any{"patch": c.patch})
		if !res.IsError || res.ReasonCode() != c.reason {
			t.Errorf("%s: result %q reason %q, want %s", name, res.Text(), res.ReasonCode(), c.reason)
		}
		if diff := cmp.Diff(before, snapshot()); diff != "" {
			t.Fatalf("%s: files changed (-before +after):\n%s", name, diff)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(e.work), "escape.txt")); err == nil {
		t.Errorf("a file escaped the working directory")
	}
}

func TestApplyPatchStagingFailureChangesNothing(t *testing.T) {
	e := newEnv(t, nil)
	e.write("a.txt", "alpha\n")
	// A 250-byte name is legal, but its temporary sibling is too long to create.
	long := strings.Repeat("n", 250)
	res := e.call("apply_patch", map[string]any{"patch": "*** Begin Patch\n*** Update File: a.txt\n-alpha\n+ALPHA\n*** Add File: d/" + long + "\n+x\n*** End Patch"})
	if !res.IsError || res.ReasonCode() != files.ReasonIO {
		t.Fatalf("apply_patch = %q (%s), want an IO failure", res.Text(), res.ReasonCode())
	}
	if got := e.read("a.txt"); got != "alpha\n" {
		t.Errorf("a.txt = %q after a failed patch, want it unchanged", got)
	}
	if _, err := os.Stat(filepath.Join(e.work, "d")); !os.IsNotExist(err) {
		t.Errorf("directory created for the failed add was left behind: %v", err)
	}
	assertNoTempFiles(t, e.work)
}

func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && (strings.Contains(fi.Name(), ".tmp-") || strings.Contains(fi.Name(), ".bak-")) {
			t.Errorf("leftover temporary file %s", p)
		}
		return nil
	})
}
