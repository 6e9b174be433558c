package authz_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/authz"
)

// TestDenialTextsRevealNothing plays a prompt-injected model probing the server
// through write targets. The denial names the path only as the call gave it and says
// one fixed phrase: never the resolved path, a symlink target, the server's working
// directory or binary, its open files, or whether something outside exists. The full
// resolution goes to the debug log only.
func TestDenialTextsRevealNothing(t *testing.T) {
	f := newFixture(t, t.TempDir())
	state := filepath.Join(f.work, "cfg", "op") // $OPENPROGRAM_HOME inside the working directory
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	f.symlink(t, "cfg/op", filepath.Join(f.work, "statelink"))
	cwd, _ := os.Getwd()
	exe, _ := os.Executable()
	agent := authz.Authority{SpeakerKind: "agent", SpeakerID: "agent/sub", SpeakerDisplay: "Sub agent",
		PrincipalID: principal, Tier: authz.TierOwner, Interaction: authz.InteractionNonInteractive}
	const (
		outside = " is outside the working directories"
		pfile   = " is a protected file"
		pdir    = " is inside a protected directory"
		unres   = " cannot be resolved"
	)
	type row struct{ tool, path, want string }
	var cases []row
	if onWindows {
		// The system's own places, and the forms that name another file
		// or a device: the same fixed texts, nothing of what is there.
		win := os.Getenv("SystemRoot")
		for _, c := range []struct{ p, end string }{
			{win + `\System32\config\SAM`, outside},
			{win + `\nonexistent\..\x`, outside},
			{win + `\win.ini\..\x`, outside}, // exists: same text
			{win + `\System32\drivers\etc\hosts`, outside},
			{`C:\ProgramData\Microsoft\Windows\Start Menu\Programs\StartUp\x.bat`, outside},
			{`Z:\x`, outside},
			{`\\?\` + win + `\x`, unres},
			{`\\.\PhysicalDrive0`, unres},
			{`\\localhost\C$\x`, unres},
			{`C:x`, unres},
			{`\x`, unres},
			{`CONOUT$`, unres},
			{`sub\aux.txt`, unres},
			{`notes.txt:secret`, unres},
			{"sub\\\x1b[2J", unres},
			{`.git::$INDEX_ALLOCATION\config`, unres},
			{`sub\.env`, pfile},
			{`.GIT\config`, pdir},
			{`Documents\PowerShell\Microsoft.PowerShell_profile.ps1`, pdir},
			{`cfg\op\config.json`, pdir},
			{strings.ToUpper(`cfg\op\x`), pdir},
		} {
			cases = append(cases, row{"write", c.p, "write target " + shown(c.p) + c.end})
		}
	} else {
		cases = []row{
			{"write", "/proc/self/cwd/x", "write target /proc/self/cwd/x" + outside},
			{"write", "/proc/self/exe/../x", "write target /proc/self/exe/../x" + outside},
			{"write", "/etc/nonexistent/../x", "write target /etc/nonexistent/../x" + outside},
			{"write", "/etc/passwd/../x", "write target /etc/passwd/../x" + outside}, // exists: same text
			{"write", "/proc/self/fd/0/x", "write target /proc/self/fd/0/x" + outside},
			{"write", "/proc/self/root/../x", "write target /proc/self/root/../x" + outside},
			{"write", "/etc/\x1b[2J", `write target "/etc/\x1b[2J"` + outside},
			{"write", "/proc/" + strings.Repeat("x", 80), "write target /proc/" + strings.Repeat("x", 58) + "..." + outside},
		}
	}
	cases = append(cases, []row{
		{"edit", "link/x", "edit target link/x" + outside},
		{"edit", "link/missing/../x", "edit target link/missing/../x" + outside},
		{"edit", "dangle", "edit target dangle" + outside},
		{"write", "etc/shadow", "write target etc/shadow" + outside},
		{"write", "../outside/nope/../x", "write target ../outside/nope/../x" + outside},
		{"write", "loop1/x", "write target loop1/x" + unres},
		{"write", "missing/../../x", "write target missing/../../x" + unres},
		{"write", "gitlink/config", "write target gitlink/config" + pdir},
		{"write", "sub/.env", "write target sub/.env" + pfile},
		{"write", "statelink/owner.json", "write target statelink/owner.json" + pdir},
		{"write", "cfg/op/config.json", "write target cfg/op/config.json" + pdir},
		{"write", "cfg/./op", "write target cfg/./op" + pdir},
		{"write", strings.Repeat("a/", 50) + "../../" + strings.Repeat("../", 60) + "etc/x", "write target " + strings.Repeat("a/", 32) + "..." + unres},
	}...)
	wantPrefix := map[string]string{"write": "hard constraint: ", "edit": "hard constraint: "}
	absPath := regexp.MustCompile(`[/\\][A-Za-z0-9._-]+|\b[A-Za-z]:`)
	for _, c := range cases {
		if f.skipPaths(t, c.path, c.path) {
			continue
		}
		var log bytes.Buffer
		req := authz.Request{Source: authz.SourceAgentSpawn, PermissionMode: authz.ModeAsk, Authority: agent,
			WorkDirs: []string{f.work}, StateDir: state,
			Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))}
		d := decide(t, req, c.tool, args("path", c.path))
		if want := wantPrefix[c.tool] + c.want; d.Message != want || d.ReasonCode != authz.ReasonHardConstraint {
			t.Errorf("Decide(%s %q).Message = %q (%s), want %q", c.tool, c.path, d.Message, d.ReasonCode, want)
			continue
		}
		// Nothing of the machine beyond what the call itself said.
		rest := strings.Replace(strings.Replace(d.Message, strconv.Quote(c.path), "", 1), c.path, "", 1)
		for _, secret := range []string{f.root, f.outside, cwd, filepath.Dir(exe), "/etc/passwd:", "does not exist", "symlink"} {
			if secret != "" && strings.Contains(rest, secret) {
				t.Errorf("Decide(%q).Message = %q reveals %q", c.path, d.Message, secret)
			}
		}
		if m := absPath.FindString(rest); m != "" && len(c.path) < 64 {
			t.Errorf("Decide(%q).Message = %q holds the path %q the call did not give", c.path, d.Message, m)
		}
		if !strings.Contains(log.String(), "resolution=") {
			t.Errorf("Decide(%q): debug log %q lacks the resolution", c.path, log.String())
		}
	}
	// The resolution the model never sees is in the log.
	var log bytes.Buffer
	req := authz.Request{Source: authz.SourceAgentSpawn, PermissionMode: authz.ModeAsk, Authority: agent, WorkDirs: []string{f.work},
		Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	decide(t, req, "write", args("path", "../outside/x"))
	// (The text handler writes a backslash as two.)
	if want := filepath.Join(f.outside, "x"); !strings.Contains(strings.ReplaceAll(log.String(), `\\`, `\`), want) {
		t.Errorf("debug log = %q, want the resolved path %s", log.String(), want)
	}
	// No logger: nothing breaks.
	req.Logger = nil
	if d := decide(t, req, "write", args("path", "../outside/x")); d.Allowed {
		t.Error("Decide without a logger allowed an escape")
	}
}

func TestConfine(t *testing.T) {
	f := newFixture(t, t.TempDir())
	dirs := []string{f.work, f.work2}
	type in struct{ p, wantDir, wantRel string }
	ins := []in{
		{"a.txt", f.work, "a.txt"},
		{".", f.work, "."},
		{"ok/file.txt", f.work, "sub/file.txt"},
		{f.work2 + "/x/y", f.work2, "x/y"},
		{"gitlink/config", f.work, ".git/config"}, // Confine alone does not protect
	}
	type refusal struct{ p, phrase string }
	refusals := []refusal{
		{"", authz.PhraseUnresolvable},
		{"a\x00b", authz.PhraseUnresolvable},
		{"link/x", authz.PhraseOutside},
		{"../outside/x", authz.PhraseOutside},
		{"loop1", authz.PhraseUnresolvable},
		{"file.txt/x", authz.PhraseUnresolvable},
	}
	type write struct{ state, p, phrase string }
	writes := []write{
		{"", "sub/.bashrc", authz.PhraseProtectedFile},
		{"", "sub/.openprogram-dev/x", authz.PhraseProtectedDir},
		{f.work + "/sub", "ok/new", authz.PhraseProtectedDir},     // the state dir wherever it is
		{f.work + "/ok", "sub/new", authz.PhraseProtectedDir},     // given through a symlink
		{f.work + "/sub/../sub", "sub", authz.PhraseProtectedDir}, // the directory itself
		{f.work + "/missing-state", "missing-state/x", authz.PhraseProtectedDir},
	}
	writable := []write{{"", "sub/new", ""}, {f.work + "/sub", "subway", ""}, {"relative", "relative/x", ""}}
	if onWindows {
		ins = append(ins, []in{
			{`sub\file.txt`, f.work, "sub/file.txt"},
			{f.work2 + `\x\y`, f.work2, "x/y"},
			{`.\sub\..\a.txt`, f.work, "a.txt"},
		}...)
		refusals = append(refusals, []refusal{
			{`..\outside\x`, authz.PhraseOutside},
			{os.Getenv("SystemRoot") + `\x`, authz.PhraseOutside},
			{`file.txt\x`, authz.PhraseUnresolvable},
			{`a.txt:s`, authz.PhraseUnresolvable},
			{`NUL`, authz.PhraseUnresolvable},
			{`sub\com1.txt`, authz.PhraseUnresolvable},
			{`a.txt.`, authz.PhraseUnresolvable},
			{`\\?\` + f.work + `\a`, authz.PhraseUnresolvable},
			{`\\server\share\a`, authz.PhraseUnresolvable},
			{`C:a`, authz.PhraseUnresolvable},
		}...)
		writes = append(writes, []write{
			{"", `sub\.BashRC`, authz.PhraseProtectedFile},
			{"", `sub\Start Menu\Programs\Startup\x.lnk`, authz.PhraseProtectedDir},
			{"", `sub\my_profile.ps1`, authz.PhraseProtectedFile},
			{f.work + `\sub`, `SUB\new`, authz.PhraseProtectedDir}, // the state dir in any case
			{strings.ToUpper(f.work) + `\SUB`, `sub\new`, authz.PhraseProtectedDir},
		}...)
		writable = append(writable, write{f.work + `\sub`, `subway\x`, ""}, write{"", `sub\profile.ps1.txt`, ""})
	}
	for _, c := range ins {
		if f.skipPaths(t, c.p, c.p) {
			continue
		}
		got, err := authz.Confine(dirs, c.p)
		wantRel := filepath.FromSlash(c.wantRel)
		if err != nil || got.WorkDir != c.wantDir || got.Rel != wantRel || got.Resolved != filepath.Join(c.wantDir, wantRel) {
			t.Errorf("Confine(%q) = %+v, %v; want %s + %s", c.p, got, err, c.wantDir, wantRel)
		}
	}
	for _, c := range refusals {
		if f.skipPaths(t, c.p, c.p) {
			continue
		}
		_, err := authz.Confine(dirs, c.p)
		pe, ok := err.(*authz.PathError)
		if !ok || pe.Phrase != c.phrase || pe.Path != c.p || pe.Detail == "" {
			t.Errorf("Confine(%q) error = %#v, want a PathError %q with a detail", c.p, err, c.phrase)
		}
	}
	if _, err := authz.Confine(nil, sysPath("/tmp/x")); err == nil {
		t.Error("Confine with no working directories succeeded")
	}
	for _, c := range writes {
		if f.skipPaths(t, c.p, c.state, c.p) {
			continue
		}
		_, err := authz.ConfineWrite(dirs, c.state, c.p)
		pe, ok := err.(*authz.PathError)
		if !ok || pe.Phrase != c.phrase {
			t.Errorf("ConfineWrite(state %q, %q) error = %v, want %q", c.state, c.p, err, c.phrase)
		}
	}
	for _, c := range writable {
		if _, err := authz.ConfineWrite(dirs, c.state, c.p); err != nil {
			t.Errorf("ConfineWrite(state %q, %q) = %v, want allowed", c.state, c.p, err)
		}
	}
}
