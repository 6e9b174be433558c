package files_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/windows"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/internal/clip"
	"github.com/openprogram/openprogram/internal/wine"
	"github.com/openprogram/openprogram/runtime/builtin/files"
	"github.com/openprogram/openprogram/runtime/tool"
)

// The fixed endings of a path denial (authz's phrases as the file tools
// show them).
const (
	notResolved = " cannot be resolved"
	protDir     = " is inside a protected directory"
	protFile    = " is a protected file"
	outsideWD   = " is outside the working directories"
)

// shown is how a denial names the path the call gave: quoted when it has a
// backslash, a quote, a leading or trailing space or an unprintable rune,
// and clipped to 64 bytes.
func shown(p string) string {
	p = clip.String(p, 64)
	if p == "" || strings.TrimSpace(p) != p || strings.ContainsAny(p, `"\`) {
		return strconv.Quote(p)
	}
	for _, r := range p {
		if !strconv.IsPrint(r) {
			return strconv.Quote(p)
		}
	}
	return p
}

// shortName returns the 8.3 name the system gives the existing path p, or
// "" when it gives none (8.3 names off on the volume).
func shortName(t *testing.T, p string) string {
	t.Helper()
	in, err := windows.UTF16PtrFromString(p)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]uint16, windows.MAX_LONG_PATH)
	n, err := windows.GetShortPathName(in, &buf[0], uint32(len(buf)))
	if err != nil {
		t.Fatalf("GetShortPathName(%q): %v", p, err)
	}
	s := filepath.Base(windows.UTF16ToString(buf[:n]))
	if strings.EqualFold(s, filepath.Base(p)) {
		return ""
	}
	return s
}

// TestWindowsPathTricks is the table of Windows path forms against the file
// tools, the dangerous-file rules and the state-directory guard: every
// trick is refused with a fixed text that names the path only as given,
// and the plain forms still work. The tools run without a call speaker, so
// writes are a constrained source's (authz.ConfineWrite with the state
// directory).
func TestWindowsPathTricks(t *testing.T) {
	work, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(work, "OpenProgram State")
	for _, d := range []string{state, filepath.Join(work, ".git", "hooks"), filepath.Join(work, "sub"), filepath.Join(work, "Program Files")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"notes.txt", ".env", `.git\config`, `sub\ok.txt`, filepath.Join("Program Files", "app.txt")} {
		if err := os.WriteFile(filepath.Join(work, f), []byte("a\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	for _, tl := range files.Tools(&files.Options{WorkDirs: []string{work}, StateDir: state}) {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	e := &env{t: t, work: work, reg: reg, ex: tool.NewExecutor(nil), ctx: t.Context()}

	// Links out of the working directory: Wine's CreateSymbolicLink makes
	// nothing, and it has no junctions, so those rows run on Windows only.
	const noLinks = "Wine makes no symlinks or junctions (its CreateSymbolicLink reports success and creates nothing)"
	linkSkip := ""
	if wine.Detected() {
		linkSkip = noLinks
	} else {
		if err := os.Symlink(outside, filepath.Join(work, "symout")); err != nil {
			linkSkip = "this account may not create symlinks: " + err.Error()
		}
		if out, err := exec.Command("cmd", "/c", "mklink", "/J", filepath.Join(work, "junction"), outside).CombinedOutput(); err != nil {
			t.Fatalf("mklink /J: %v: %s", err, out)
		}
		if out, err := exec.Command("cmd", "/c", "mklink", "/J", filepath.Join(work, "gitj"), filepath.Join(work, ".git")).CombinedOutput(); err != nil {
			t.Fatalf("mklink /J: %v: %s", err, out)
		}
	}

	gitShort := shortName(t, filepath.Join(work, ".git"))
	stateShort := shortName(t, state)
	progShort := shortName(t, filepath.Join(work, "Program Files"))
	const noShort = "the volume gives no 8.3 names"
	skipIf := func(cond bool, why string) string {
		if cond {
			return why
		}
		return ""
	}
	vol := filepath.VolumeName(work)
	rest := strings.TrimPrefix(work, vol)

	type row struct {
		tool, path, want string // want "" means the call succeeds
		skip             string
	}
	w, r := "write", "read"
	rows := []row{
		// Plain forms, and slash mixes of them, still work.
		{w, "sub/new.txt", "", ""},
		{w, `sub\new2.txt`, "", ""},
		{r, `sub/..\notes.txt`, "", ""},
		{r, filepath.Join(work, "notes.txt"), "", ""},
		{r, strings.ToUpper(vol) + strings.ToUpper(rest) + `\NOTES.TXT`, "", ""},

		// Alternate data streams: refused outright.
		{w, "notes.txt:evil", notResolved, ""},
		{r, "notes.txt:evil", notResolved, ""},
		{w, ".git::$INDEX_ALLOCATION", notResolved, ""},
		{w, `.git::$INDEX_ALLOCATION\hooks\pre-commit`, notResolved, ""},
		{w, ".env::$DATA", notResolved, ""},
		{r, ".env::$DATA", notResolved, ""},
		{w, `sub\x.txt:$DATA`, notResolved, ""},

		// 8.3 short names are the long names they stand for.
		{w, gitShort + `\config`, protDir, skipIf(gitShort == "", noShort)},
		{w, gitShort + `\hooks\post-checkout`, protDir, skipIf(gitShort == "", noShort)},
		{w, stateShort + `\config.json`, protDir, skipIf(stateShort == "", noShort)},
		{r, progShort + `\app.txt`, "", skipIf(progShort == "", noShort)},
		{r, `C:\PROGRA~1\x.txt`, outsideWD, ""},
		{w, `GIT~1\config`, protDir, skipIf(wine.Detected() || gitShort != "GIT~1", "the system names .git otherwise than GIT~1 (Wine hashes 8.3 names); the row above uses its real short name")},

		// Letter case.
		{w, `.GIT\config`, protDir, ""},
		{w, ".Git/config", protDir, ""},
		{w, ".Env", protFile, ""},
		{w, `sub\.BASHRC`, protFile, ""},
		{w, `OPENPROGRAM STATE\config.json`, protDir, ""},
		{w, strings.ToUpper(state) + `\owner.json`, protDir, ""},
		{w, `openprogram state/x`, protDir, ""},

		// Reserved device names, with or without an extension, anywhere.
		{w, "CON", notResolved, ""},
		{r, "CON", notResolved, ""},
		{w, "nul.txt", notResolved, ""},
		{r, "nul.txt", notResolved, ""},
		{w, "COM1", notResolved, ""},
		{w, "LPT1.log", notResolved, ""},
		{w, "conin$", notResolved, ""},
		{r, "CONOUT$", notResolved, ""},
		{w, `sub\aux.c`, notResolved, ""},
		{w, "prn .txt", notResolved, ""},
		{r, "com\u00b9", notResolved, ""},
		{"list", `sub\nul`, notResolved, ""},

		// Trailing dots and spaces.
		{w, ".git.", notResolved, ""},
		{w, `.git.\config`, notResolved, ""},
		{w, ".env ", notResolved, ""},
		{w, "notes.txt.", notResolved, ""},
		{r, "notes.txt.", notResolved, ""},
		{w, `sub. \x.txt`, notResolved, ""},

		// Device, NT and UNC paths, drive-relative and rooted-without-drive.
		{r, `\\?\` + filepath.Join(work, "notes.txt"), notResolved, ""},
		{w, `\\?\` + filepath.Join(work, "x.txt"), notResolved, ""},
		{r, `\\.\` + filepath.Join(work, "notes.txt"), notResolved, ""},
		{r, `\\.\PhysicalDrive0`, notResolved, ""},
		{r, `\\?\GLOBALROOT\Device\HarddiskVolume1\x`, notResolved, ""},
		{r, `\??\` + filepath.Join(work, "notes.txt"), notResolved, ""},
		{r, `\\server\share\x.txt`, notResolved, ""},
		{w, `//server/share/x.txt`, notResolved, ""},
		{w, `\/server\share`, notResolved, ""},
		{w, vol + "x.txt", notResolved, ""},
		{r, vol + `notes.txt`, notResolved, ""},
		{w, `\x.txt`, notResolved, ""},
		{w, "/x.txt", notResolved, ""},
		{r, rest + `\notes.txt`, notResolved, ""},

		// Forward/back slash mixes reach the protected names all the same.
		{w, `.git/hooks\pre-commit`, protDir, ""},
		{w, `sub/..\.git/config`, protDir, ""},
		{w, `sub\../.env`, protFile, ""},

		// Out of the working directory.
		{r, filepath.Join(outside, "secret.txt"), outsideWD, ""},
		{r, `sub\..\..\` + filepath.Base(outside) + `\secret.txt`, outsideWD, ""},
		{r, `symout\secret.txt`, outsideWD, linkSkip},
		{w, `symout\x.txt`, outsideWD, linkSkip},
		{r, `junction\secret.txt`, outsideWD, skipIf(wine.Detected(), noLinks)},
		{w, `junction\x.txt`, outsideWD, skipIf(wine.Detected(), noLinks)},
		{w, `gitj\hooks\pre-commit`, protDir, skipIf(wine.Detected(), noLinks)},

		// Windows' autostart places.
		{w, `AppData\Roaming\Microsoft\Windows\Start Menu\Programs\Startup\run.bat`, protDir, ""},
		{w, `start menu/programs/STARTUP/run.lnk`, protDir, ""},
		{w, `Documents\PowerShell\Microsoft.PowerShell_profile.ps1`, protDir, ""},
		{w, `Documents\WindowsPowerShell\profile.ps1`, protDir, ""},
		{w, `documents\windowspowershell\Modules\m\m.psm1`, protDir, ""},
	}
	for _, c := range rows {
		t.Run(c.tool+" "+c.path, func(t *testing.T) {
			if c.skip != "" {
				t.Skip(c.skip)
			}
			var args map[string]any
			switch c.tool {
			case "write":
				args = map[string]any{"path": c.path, "content": "x"}
			default:
				args = map[string]any{"path": c.path}
			}
			res := e.call(c.tool, args)
			if c.want == "" {
				if res.IsError {
					t.Fatalf("%s %q = %q, want success", c.tool, c.path, res.Text())
				}
				return
			}
			if want := shown(c.path) + c.want; !res.IsError || res.Text() != want {
				t.Fatalf("%s %q = %q (error %v), want %q", c.tool, c.path, res.Text(), res.IsError, want)
			}
			if strings.Contains(res.Text(), outside) || (c.path != work && !strings.Contains(c.path, work) && strings.Contains(res.Text(), work)) {
				t.Errorf("%s %q = %q reveals a resolved path", c.tool, c.path, res.Text())
			}
		})
	}
	// Nothing was written outside or under a refused name.
	if _, err := os.Stat(filepath.Join(outside, "x.txt")); err == nil {
		t.Error("a write reached the outside directory")
	}
	for _, name := range []string{"x.txt", filepath.Join(".git", "config:evil")} {
		if _, err := os.Lstat(filepath.Join(work, name)); err == nil {
			t.Errorf("%s was written", name)
		}
	}
	// The rules themselves, as authz answers them.
	for _, p := range []string{
		filepath.Join(work, gitShort, "config"),
		filepath.Join(work, `Start Menu\Programs\Startup\x.cmd`),
		filepath.Join(work, `My Documents\PowerShell\profile.ps1`),
	} {
		if gitShort == "" && strings.Contains(p, ".git") {
			continue
		}
		if _, err := authz.ConfineWrite([]string{work}, state, p); err == nil {
			t.Errorf("authz.ConfineWrite(%q) = nil, want a denial", p)
		}
	}
}
