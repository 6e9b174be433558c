package authz_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
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
//	root/work/etc       -> /etc (on Windows, the hosts file's directory)
//	root/work/dangle    -> root/outside/new.txt (dangling: a write creates the target)
//	root/work/ok        -> sub                (stays inside)
//	root/work/gitlink   -> .git               (dangerous directory under another name)
//	root/work/loop1 <-> root/work/loop2
//	root/work/file.txt  (a regular file, so file.txt/x is not a directory)
//	root/outside/
//	root/work2/                 a second working directory
//
// Where the system makes no symlinks (Wine; a Windows user without the
// right to), noLinks says so and the rows that go through one skip
// ([fixture.skipPaths]); every other row runs.
type fixture struct {
	root, work, outside, work2 string
	noLinks                    string
}

// fixtureLinks are the names of the fixture's symlinks, and of those
// tests add to it.
var fixtureLinks = []string{"link", "rel", "etc", "dangle", "ok", "gitlink", "loop1", "loop2", "statelink", "home"}

func newFixture(tb testing.TB, dir string) fixture {
	tb.Helper()
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
	links := [][2]string{
		{"link", f.outside}, {"rel", "../outside"}, {"etc", etcDir}, {"dangle", filepath.Join(f.outside, "new.txt")},
		{"ok", "sub"}, {"gitlink", ".git"}, {"loop1", "loop2"}, {"loop2", "loop1"},
	}
	for _, l := range links {
		if !f.symlink(tb, l[1], filepath.Join(f.work, l[0])) {
			break
		}
	}
	return f
}

// symlink makes the symlink link to target (slashes as the system writes
// them) and reports whether the system made it; when it did not, noLinks
// says why.
func (f *fixture) symlink(tb testing.TB, target, link string) bool {
	tb.Helper()
	if f.noLinks != "" {
		return false
	}
	if err := os.Symlink(filepath.FromSlash(target), link); err != nil {
		if !onWindows {
			tb.Fatal(err)
		}
		f.noLinks = "this Windows user may not make symlinks (" + err.Error() + "); a runner that may checks this row"
		return false
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		if !onWindows {
			tb.Fatalf("os.Symlink(%s) made no symlink: %v", link, err)
		}
		f.noLinks = "the system reported a symlink made and made none (Wine 8); a real Windows runner checks this row"
		return false
	}
	return true
}

// skipPaths reports whether a row naming the paths ps goes through a
// symlink the system could not make, and logs that the row is skipped,
// with the reason. A path goes through one when, read from the working
// directory (a relative path) or written below it, a component right in
// the working directory is a link's name.
func (f fixture) skipPaths(tb testing.TB, row string, ps ...string) bool {
	tb.Helper()
	if f.noLinks == "" {
		return false
	}
	for _, p := range ps {
		if filepath.IsAbs(p) {
			rest, ok := strings.CutPrefix(p, f.work)
			if !ok || rest != "" && rest[0] != '/' && rest[0] != filepath.Separator {
				continue
			}
			p = rest
		}
		depth := 0 // below the working directory
		for _, c := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == filepath.Separator }) {
			switch {
			case c == ".":
			case c == "..":
				depth--
			case depth == 0 && slices.Contains(fixtureLinks, c):
				tb.Logf("row %s skipped: %s", row, f.noLinks)
				return true
			default:
				depth++
			}
		}
	}
	return false
}

// skipCall is [fixture.skipPaths] for a call's arguments: every string
// argument, and every target of one that is a patch.
func (f fixture) skipCall(tb testing.TB, row string, args json.RawMessage) bool {
	tb.Helper()
	var obj map[string]any
	if json.Unmarshal(args, &obj) != nil {
		return false
	}
	var ps []string
	for _, v := range obj {
		s, ok := v.(string)
		if !ok {
			continue
		}
		if targets, err := authz.PatchTargets(s); err == nil {
			ps = append(ps, targets...)
		} else {
			ps = append(ps, s)
		}
	}
	return f.skipPaths(tb, row, ps...)
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
		{w, "../../../../../../../etc/passwd", sysPath("/etc/passwd")},
		{w, sysPath("/etc/passwd"), sysPath("/etc/passwd")},
		{"", etcDir + "/../" + filepath.Base(etcDir) + "/passwd", etcDir + "/passwd"},
		{w, "link/x.txt", o + "/x.txt"},
		{w, "link", o},
		{w, "rel/deep/new.txt", o + "/deep/new.txt"},
		{w, "etc/passwd", etcDir + "/passwd"},
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
	if onWindows {
		cases = append(cases, []struct{ workDir, p, want string }{
			{w, `sub\file.txt`, w + "/sub/file.txt"},
			{w, `sub/..\sub\.\file.txt`, w + "/sub/file.txt"},
			{w, `..\outside\a.txt`, o + "/a.txt"},
			{w, `..\..\..\..\..\..\..\..\etc\passwd`, sysPath("/etc/passwd")},
			{w, w + `\sub\file.txt`, w + "/sub/file.txt"},
			{w + `\`, `a`, w + "/a"},
			{w, `link\x.txt`, o + "/x.txt"},
			{w, `ok\..\a`, w + "/a"},
			{w, `gitlink\config`, w + "/.git/config"},
		}...)
	}
	for _, c := range cases {
		if f.skipPaths(t, c.p, c.workDir, c.p) {
			continue
		}
		want := filepath.FromSlash(c.want)
		got, err := authz.ResolvePath(c.workDir, c.p)
		if err != nil || !sameFile(got, want) {
			t.Errorf("ResolvePath(%q, %q) = %q, %v; want %q", c.workDir, c.p, got, err, want)
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
	if onWindows {
		// The forms that alias or escape a plain path, refused before the walk.
		cases = append(cases, []struct{ workDir, p string }{
			{w, `missing\..\..\outside\x`}, {w, `file.txt\x`}, {`C:relative`, `a.txt`}, {"", `\x`},
			{w, `notes.txt:evil`}, {w, `.git::$INDEX_ALLOCATION\config`}, {w, `sub\file.txt::$DATA`},
			{w, `CON`}, {w, `nul.txt`}, {w, `sub\COM1`}, {w, `lpt9.log`}, {w, `CONIN$`}, {w, `Aux .c`},
			{w, `x.`}, {w, `sub.\file.txt`}, {w, `x `}, {w, `a*b`}, {w, `a?b`},
			{w, `\\?\` + w + `\a`}, {w, `\\.\` + w + `\a`}, {w, `\\server\share\a`}, {w, `//server/share/a`},
			{w, `C:a`}, {w, `\a`}, {w, `/a`},
		}...)
	}
	for _, c := range cases {
		if f.skipPaths(t, c.p, c.workDir, c.p) {
			continue
		}
		if got, err := authz.ResolvePath(c.workDir, c.p); err == nil {
			t.Errorf("ResolvePath(%q, %q) = %q, nil; want an error", c.workDir, c.p, got)
		}
	}
}

func TestInsideWorkDirs(t *testing.T) {
	f := newFixture(t, t.TempDir())
	dirs := []string{f.work, f.work2}
	in := []string{f.work, f.work + "/a", f.work + "/sub/file.txt", f.work2 + "/x/y", f.work + "/..x"}
	out := []string{f.root, f.outside + "/a", f.work + "x", f.work + "2x/a", sysPath("/etc/passwd"), "relative", "", f.work + "/../outside"}
	if onWindows {
		// Names compare ignoring case; another drive, a UNC path or a
		// drive-relative one is never inside.
		other := "D:"
		if strings.EqualFold(filepath.VolumeName(f.work), other) {
			other = "E:"
		}
		in = append(in, strings.ToUpper(f.work)+`\A`, strings.ToLower(f.work2)+`\x\y`, f.work+`\sub\..\sub\x`)
		out = append(out, other+f.work[len(filepath.VolumeName(f.work)):]+`\a`, `\\server\share\a`, `C:a`, `\a`,
			f.work+`\..\outside`, strings.ToUpper(f.work)+"X")
	}
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
	if !f.skipPaths(t, "work/link", f.work+"/link") && !authz.InsideWorkDirs(f.outside+"/a", []string{f.work + "/link"}) {
		t.Error("InsideWorkDirs(outside/a, [work/link]) = false, want true")
	}
	if !authz.InsideWorkDirs(sysPath("/anything"), []string{sysPath("/")}) {
		t.Errorf("InsideWorkDirs(%s, [%s]) = false, want true", sysPath("/anything"), sysPath("/"))
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
	ps := []string{"a", "../a", "../../..", "/", ".", "link/../../.."}
	if onWindows {
		ps = append(ps, `..\a`, `..\..\..\..\..\..\..`, sysPath("/"), `sub\..\..`, `link\..\..\..`)
	}
	for _, p := range ps {
		got, err := authz.ResolvePath(f.work, p)
		if err != nil {
			continue
		}
		if !filepath.IsAbs(got) || filepath.Clean(got) != got || strings.Contains(filepath.ToSlash(got), "/../") {
			t.Errorf("ResolvePath(%q) = %q, want a clean absolute path", p, got)
		}
	}
}
