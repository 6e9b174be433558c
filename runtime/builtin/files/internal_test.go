package files

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/authz"
)

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pattern, path string
		want          bool
	}{
		{"**/*.go", "a.go", true},
		{"**/*.go", "x/y/a.go", true},
		{"**/*.go", "x/y/a.txt", false},
		{"*.go", "x/a.go", false},
		{"x/**", "x/a/b", true},
		{"x/**", "y/a", false},
		{"x/**/b", "x/b", true},
		{"x/**/b", "x/1/2/b", true},
		{"x/**/**/b", "x/1/b", true},
		{"a?c", "abc", true},
		{"[ab]*", "b1", true},
		{"./src/*.ts", "src/a.ts", true},
	}
	for _, c := range cases {
		g, err := parseGlob(c.pattern)
		if err != nil {
			t.Fatalf("parseGlob(%q) = %v", c.pattern, err)
		}
		if got := g.match(c.path); got != c.want {
			t.Errorf("match(%q, %q) = %v, want %v", c.pattern, c.path, got, c.want)
		}
	}
	g, _ := parseGlob("src/*/x.go")
	for dir, want := range map[string]bool{"src": true, "src/a": true, "src/a/b": false, "lib": false} {
		if got := g.mayContain(dir); got != want {
			t.Errorf("mayContain(%q) = %v, want %v", dir, got, want)
		}
	}
}

func TestParsePatchAndApplyHunks(t *testing.T) {
	ops, err := authz.ParsePatch("*** Begin Patch\r\n*** Update File: f\r\n@@ -1,3 +1,3 @@\r\n a\r\n-b\r\n+B\r\n\r\n*** End Patch\r\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 1 || len(ops[0].Hunks) != 1 || ops[0].Hunks[0].Header != "" || len(ops[0].Hunks[0].Lines) != 3 {
		t.Fatalf("parsePatch = %+v, want one hunk of 3 lines without header", ops)
	}
	cases := []struct {
		name, content, patch, want string
	}{
		{"trailing spaces tolerated", "a  \nb\nc\n", "*** Begin Patch\n*** Update File: f\n a\n-b\n+B\n*** End Patch", "a  \nB\nc\n"},
		{"no trailing newline kept", "a\nb", "*** Begin Patch\n*** Update File: f\n a\n-b\n+c\n*** End Patch", "a\nc"},
		{"pure insertion appends", "a\n", "*** Begin Patch\n*** Update File: f\n+z\n*** End Patch", "a\nz\n"},
		{"eof anchor", "x\ny\nx\n", "*** Begin Patch\n*** Update File: f\n-x\n+X\n*** End of File\n*** End Patch", "x\ny\nX\n"},
		{"hunks in order", "k\nv\nk\nv\n", "*** Begin Patch\n*** Update File: f\n@@\n k\n-v\n+1\n@@\n k\n-v\n+2\n*** End Patch", "k\n1\nk\n2\n"},
		{"empty context line", "a\n\nb\n", "*** Begin Patch\n*** Update File: f\n a\n\n-b\n+c\n*** End Patch", "a\n\nc\n"},
		{"indented marker text as context", "x\n *** note\ny\n", "*** Begin Patch\n*** Update File: f\n x\n  *** note\n-y\n+z\n*** End Patch", "x\n *** note\nz\n"},
	}
	for _, c := range cases {
		ops, err := authz.ParsePatch(c.patch)
		if err != nil {
			t.Errorf("%s: parsePatch = %v", c.name, err)
			continue
		}
		got, err := applyHunks(c.content, ops[0])
		if err != nil {
			t.Errorf("%s: applyHunks = %v", c.name, err)
			continue
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
	for _, bad := range []string{
		"",
		"*** Begin Patch\n*** End Patch",
		"*** Begin Patch\n*** Frobnicate: x\n*** End Patch",
		"*** Begin Patch\n*** Add File: x\nno plus\n*** End Patch",
		"*** Begin Patch\n*** Delete File: x\ncontent\n*** End Patch",
		"*** Begin Patch\n*** Move to: y\n*** End Patch",
		"*** Begin Patch\n*** Update File: x\n@@\n*** End Patch",
		"*** Begin Patch\n*** Add File:  spaced\n+x\n*** End Patch",
	} {
		if _, err := authz.ParsePatch(bad); err == nil {
			t.Errorf("authz.ParsePatch(%q) = nil error", bad)
		}
	}
}

// commitRenameOK is what commitRename and restoreRename are outside tests.
func commitRenameOK(dir *os.Root, from, to string) error { return dir.Rename(from, to) }

func TestCommitRollsBackWhenARenameFails(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	write := func(name, content string) loc {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return loc{root: root, rel: name, shown: name}
	}
	upd := write("upd.txt", "old\n")
	del := write("del.txt", "gone?\n")
	src := write("src.txt", "moving\n")
	plan := []change{
		{kind: authz.PatchUpdate, target: upd, data: []byte("new\n"), perm: 0o644},
		{kind: authz.PatchDelete, target: del},
		{kind: authz.PatchUpdate, from: &src, target: loc{root: root, rel: "dst.txt", shown: "dst.txt"}, data: []byte("moving\n"), perm: 0o644},
		{kind: authz.PatchAdd, target: loc{root: root, rel: filepath.Join("new", "add.txt"), shown: "new/add.txt"}, data: []byte("added\n"), perm: 0o644},
	}
	for failAt := 1; failAt <= 6; failAt++ {
		calls := 0
		commitRename = func(d *os.Root, a, b string) error {
			calls++
			if calls == failAt {
				return errors.New("injected rename failure")
			}
			return d.Rename(a, b)
		}
		err := commit(plan)
		commitRename = commitRenameOK
		if err == nil {
			t.Fatalf("failAt %d: commit succeeded", failAt)
		}
		got := map[string]string{}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			got[e.Name()] = string(b)
		}
		want := map[string]string{"upd.txt": "old\n", "del.txt": "gone?\n", "src.txt": "moving\n"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("failAt %d: directory after rollback (-want +got):\n%s", failAt, diff)
		}
	}
	if err := commit(plan); err != nil {
		t.Fatalf("commit = %v", err)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"dst.txt", "new", "upd.txt"}, names); diff != "" {
		t.Errorf("after commit (-want +got):\n%s", diff)
	}
}

// A rollback that cannot put an original back says where it is instead of
// losing it silently, naming both as the tools show them.
func TestCommitReportsAFailedRestore(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "upd.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	plan := []change{{kind: authz.PatchUpdate, target: loc{root: root, rel: filepath.Join("sub", "upd.txt"), shown: "sub/upd.txt"}, data: []byte("new\n"), perm: 0o644}}
	calls := 0
	commitRename = func(d *os.Root, a, b string) error {
		calls++
		if calls == 2 { // the staged file into place, after the backup
			return errors.New("injected rename failure")
		}
		return d.Rename(a, b)
	}
	restoreRename = func(*os.Root, string, string) error { return errors.New("injected restore failure") }
	defer func() { commitRename, restoreRename = commitRenameOK, commitRenameOK }()

	err = commit(plan)
	if err == nil {
		t.Fatal("commit succeeded")
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "sub"))
	var bak string
	for _, e := range ents {
		if e.Name() != "upd.txt" {
			bak = e.Name()
		}
	}
	if bak == "" {
		t.Fatalf("no backup left in %v", ents)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sub", bak)); string(b) != "old\n" {
		t.Errorf("backup %s holds %q, want the original", bak, b)
	}
	if want := "restore sub/upd.txt failed (injected restore failure); its original content is in sub/" + bak; !strings.Contains(err.Error(), want) {
		t.Errorf("commit error = %q, want it to contain %q", err, want)
	}
	if strings.Contains(err.Error(), dir) {
		t.Errorf("commit error = %q names the absolute directory", err)
	}
}
