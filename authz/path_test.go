package authz_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/authz"
)

// fixture is a real directory tree with symlinks:
//
//	root/work/                  the working directory
//	root/work/sub/file.txt
//	root/work/.git/config
//	root/work/link      -> root/outside       (escape through a directory link)
//	root/work/rel       -> ../outside         (relative escape)
//	root/work/etc       -> /etc
//	root/work/dangle    -> root/outside/new.txt (dangling: a write creates the target)
//	root/work/ok        -> sub                (stays inside)
//	root/work/gitlink   -> .git               (dangerous directory under another name)
//	root/work/loop1 <-> root/work/loop2
//	root/work/file.txt  (a regular file, so file.txt/x is not a directory)
//	root/outside/
//	root/work2/                 a second working directory
type fixture struct {
	root, work, outside, work2 string
}

func newFixture(tb testing.TB, dir string) fixture {
	tb.Helper()
	unixFixture(tb)
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		tb.Fatal(err)
	}
	f := fixture{root: root, work: filepath.Join(root, "work"), outside: filepath.Join(root, "outside"), work2: filepath.Join(root, "work2")}
	for _, d := range []string{f.work, f.outside, f.work2, filepath.Join(f.work, "sub"), filepath.Join(f.work, ".git")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	for _, file := range []string{filepath.Join(f.work, "sub", "file.txt"), filepath.Join(f.work, ".git", "config"), filepath.Join(f.work, "file.txt")} {
		if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	links := map[string]string{
		"link": f.outside, "rel": "../outside", "etc": "/etc", "dangle": filepath.Join(f.outside, "new.txt"),
		"ok": "sub", "gitlink": ".git", "loop1": "loop2", "loop2": "loop1",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(f.work, name)); err != nil {
			tb.Fatal(err)
		}
	}
	return f
}

func TestResolvePath(t *testing.T) {
	f := newFixture(t, t.TempDir())
	w, o := f.work, f.outside
	cases := []struct {
		workDir, p, want string
	}{
		{w, "a.txt", w + "/a.txt"},
		{w, "./a.txt", w + "/a.txt"},
		{w, "sub/file.txt", w + "/sub/file.txt"},
		{w, "sub//file.txt/", w + "/sub/file.txt"},
		{w, "new/dir/a.txt", w + "/new/dir/a.txt"},
		{w, "../outside/a.txt", o + "/a.txt"},
		{w, "sub/../../outside", o},
		{w, "../../../../../../../etc/passwd", "/etc/passwd"},
		{w, "/etc/passwd", "/etc/passwd"},
		{"", "/etc/../etc/passwd", "/etc/passwd"},
		{w, "link/x.txt", o + "/x.txt"},
		{w, "link", o},
		{w, "rel/deep/new.txt", o + "/deep/new.txt"},
		{w, "etc/passwd", "/etc/passwd"},
		{w, "dangle", o + "/new.txt"},
		{w, "ok/file.txt", w + "/sub/file.txt"},
		{w, "gitlink/config", w + "/.git/config"},
		{w, "link/..", f.root},          // the kernel way: .. of the link target
		{w, "link/../work/a", w + "/a"}, // back inside through the parent
		{w, "ok/../a", w + "/a"},        // ok -> sub, so .. is work
		{w, "sub/./../sub/file.txt", w + "/sub/file.txt"},
		{w, ".", w},
		{w + "/", "a", w + "/a"},
		{w + "/link", "a", o + "/a"}, // the working directory itself is resolved
		{w + "/ok/..", "a", w + "/a"},
	}
	for _, c := range cases {
		got, err := authz.ResolvePath(c.workDir, c.p)
		if err != nil || got != c.want {
			t.Errorf("ResolvePath(%q, %q) = %q, %v; want %q", c.workDir, c.p, got, err, c.want)
		}
	}
}

func TestResolvePathErrors(t *testing.T) {
	f := newFixture(t, t.TempDir())
	w := f.work
	cases := []struct{ workDir, p string }{
		{w, ""},
		{"", "relative.txt"},
		{"relative/dir", "a.txt"},
		{w, "a\x00b"},
		{w + "\x00", "a"},
		{w, "loop1/x"},
		{w, "loop1"},
		{w, "missing/../../outside/x"}, // .. out of a directory that does not exist
		{w, "missing/.."},
		{w, "file.txt/x"}, // not a directory
	}
	for _, c := range cases {
		if got, err := authz.ResolvePath(c.workDir, c.p); err == nil {
			t.Errorf("ResolvePath(%q, %q) = %q, nil; want an error", c.workDir, c.p, got)
		}
	}
}

func TestInsideWorkDirs(t *testing.T) {
	f := newFixture(t, t.TempDir())
	dirs := []string{f.work, f.work2}
	in := []string{f.work, f.work + "/a", f.work + "/sub/file.txt", f.work2 + "/x/y", f.work + "/..x"}
	out := []string{f.root, f.outside + "/a", f.work + "x", f.work + "2x/a", "/etc/passwd", "relative", "", f.work + "/../outside"}
	for _, p := range in {
		if !authz.InsideWorkDirs(p, dirs) {
			t.Errorf("InsideWorkDirs(%q) = false, want true", p)
		}
	}
	for _, p := range out {
		if authz.InsideWorkDirs(p, dirs) {
			t.Errorf("InsideWorkDirs(%q) = true, want false", p)
		}
	}
	if authz.InsideWorkDirs(f.work+"/a", nil) {
		t.Error("InsideWorkDirs with no working directories = true")
	}
	if authz.InsideWorkDirs("a", []string{"."}) || authz.InsideWorkDirs(f.work+"/a", []string{"work"}) {
		t.Error("a relative working directory counted")
	}
	// A working directory given through a symlink is resolved too.
	if !authz.InsideWorkDirs(f.outside+"/a", []string{f.work + "/link"}) {
		t.Error("InsideWorkDirs(outside/a, [work/link]) = false, want true")
	}
	if !authz.InsideWorkDirs("/anything", []string{"/"}) {
		t.Error("InsideWorkDirs(/anything, [/]) = false, want true")
	}
}

func TestIsDangerousPath(t *testing.T) {
	dangerous := []string{
		"/w/.bashrc", "/w/.bash_profile", "/w/.bash_login", "/w/.profile", "/w/.zshrc", "/w/.zprofile",
		"/w/.zshenv", "/w/.gitconfig", "/w/.gitmodules", "/w/.git-credentials", "/w/.npmrc", "/w/.pypirc",
		"/w/.netrc", "/w/.mcp.json", "/w/.claude.json", "/w/.env",
		"/w/.git", "/w/.git/config", "/w/.hg/hgrc", "/w/.svn/x", "/w/.vscode/settings.json", "/w/.idea/x.xml",
		"/w/.openprogram/owner.json", "/w/.claude/settings.json", "/w/.ssh/authorized_keys", "/w/.gnupg/x",
		// Any letter case, trailing dots and spaces, NTFS streams, HFS+ ignorables.
		"/w/.BashRC", "/w/.ENV", "/w/.Git/config", "/w/.GIT./config", "/w/.git /config", "/w/.git. . /hooks/pre-commit",
		"/w/.env.", "/w/.env ", "/w/.bashrc...", "/w/.git::$INDEX_ALLOCATION/config", "/w/.env:stream",
		"/w/.g\u200cit/config", "/w/.ss\ufeffh/id_rsa", "/w/.\u017fsh/authorized_keys", // U+017F folds to s
		// Through a dangerous directory at any depth, including above the working directory.
		"/home/u/.openprogram/work/a.txt", "/w/a/b/.git/objects/x", "/w/.ssh",
		// Profile state directories (OPENPROGRAM_PROFILE).
		"/home/u/.openprogram-work/config.json", "/home/u/.OpenProgram-dev./mcp_server_token",
		// Relative or empty paths fail closed.
		"", "relative/a.txt", "/w/a\x00",
	}
	safe := []string{
		"/w/a.txt", "/w/.bashrc.bak", "/w/bashrc", "/w/.env.example", "/w/.envrc", "/w/.github/workflows/ci.yml",
		"/w/.gitignore", "/w/.gitattributes", "/w/.bashrc/x", "/w/.env/lib/x.py", "/w/git/config", "/w/.gitx/a",
		"/", "/w/sub/.profile.d", "/w/..git", "/w/.openprogram-", "/w/openprogram-x/a",
	}
	for _, p := range dangerous {
		p = sysPath(p)
		if !authz.IsDangerousPath(p) {
			t.Errorf("IsDangerousPath(%q) = false, want true", p)
		}
	}
	for _, p := range safe {
		p = sysPath(p)
		if authz.IsDangerousPath(p) {
			t.Errorf("IsDangerousPath(%q) = true, want false", p)
		}
	}
}

func TestResolvePathNeverRelative(t *testing.T) {
	f := newFixture(t, t.TempDir())
	for _, p := range []string{"a", "../a", "../../..", "/", ".", "link/../../.."} {
		got, err := authz.ResolvePath(f.work, p)
		if err != nil {
			continue
		}
		if !filepath.IsAbs(got) || filepath.Clean(got) != got || strings.Contains(got, "/../") {
			t.Errorf("ResolvePath(%q) = %q, want a clean absolute path", p, got)
		}
	}
}
