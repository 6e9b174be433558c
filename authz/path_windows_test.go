//go:build windows

package authz

import "testing"

// TestWindowsPathForms pins the per-component refusals and the Windows
// comparisons behind ResolvePath, within and the autostart rules (the
// files module's TestWindowsPathTricks runs them through the tools).
func TestWindowsPathForms(t *testing.T) {
	for p, refused := range map[string]bool{
		`C:\work\notes.txt`: false, `sub/x\y.txt`: false, `..\x`: false, `a~1`: false, `CONSOLE.txt`: false, `COM10`: false, `nulx`: false,
		`a:b`: true, `.git::$INDEX_ALLOCATION`: true, `x.`: true, `x `: true, `...`: true, `CON`: true, `con.txt`: true, `Aux .c`: true,
		`LPT9`: true, `com²`: true, `CONIN$`: true, `conout$.log`: true, `a*b`: true, `a?b`: true, "a\x01": true, `a|b`: true,
		`\\?\C:\x`: true, `\\.\C:`: true, `\\server\share`: true, `//server/share`: true, `\x`: true, `/x`: true, `C:x`: true, `C:`: true,
	} {
		if err := checkForm(p); (err != nil) != refused {
			t.Errorf("checkForm(%q) = %v, want refused %v", p, err, refused)
		}
	}
	for _, c := range []struct {
		p, dir string
		want   bool
	}{
		{`C:\Work\x`, `C:\Work`, true}, {`c:\WORK\x`, `C:\Work`, true}, {`C:\Work`, `c:\work`, true}, {`C:\x`, `C:\`, true},
		{`C:\Workx`, `C:\Work`, false}, {`D:\Work\x`, `C:\Work`, false}, {`C:\Wor`, `C:\Work`, false},
	} {
		if got := within(c.p, c.dir); got != c.want {
			t.Errorf("within(%q, %q) = %v, want %v", c.p, c.dir, got, c.want)
		}
	}
	for p, want := range map[string]string{
		`C:\Users\u\AppData\Roaming\Microsoft\Windows\Start Menu\Programs\Startup\a.bat`: PhraseProtectedDir,
		`C:\ProgramData\Microsoft\Windows\START MENU\Programs\StartUp\a.lnk`:             PhraseProtectedDir,
		`C:\Users\u\Documents\PowerShell\Microsoft.PowerShell_profile.ps1`:               PhraseProtectedDir,
		`C:\Users\u\OneDrive\Documents\WindowsPowerShell\Modules\m\m.psm1`:               PhraseProtectedDir,
		`C:\Program Files\PowerShell\7\profile.ps1`:                                      PhraseProtectedFile,
		`C:\Windows\System32\WindowsPowerShell\v1.0\Microsoft.PowerShell_profile.ps1`:    PhraseProtectedFile,
		`C:\work\Start Menu\Programs\notes.txt`:                                          "",
		`C:\work\PowerShell\script.ps1`:                                                  "",
		`C:\work\Documents\PowerShell`:                                                   "",
	} {
		if got := protection(p); got != want {
			t.Errorf("protection(%q) = %q, want %q", p, got, want)
		}
	}
}

// TestWindowsRulePatterns: permission rules name Windows paths with either
// slash and any letter case, and a deny rule never misses its file for
// the backslashes (path.Match reads \ as an escape).
func TestWindowsRulePatterns(t *testing.T) {
	for _, c := range []struct {
		rule   string
		action Action
		tool   string
		path   string
		want   bool
	}{
		{"read(*.env)", ActionDeny, "read", `C:\w\prod.env`, true},
		{"read(*.env)", ActionDeny, "read", `C:\w\PROD.ENV`, true},
		{"read(*.env)", ActionDeny, "read", `C:\w\sub\x.env`, false},
		{"write(docs/*.md)", ActionAllow, "write", `C:\w\docs\a.md`, true},
		{`write(docs\*.md)`, ActionAllow, "write", `C:\w\Docs\A.md`, true},
		{"write(docs/*.md)", ActionAllow, "write", `C:\w\docs\a.txt`, false},
		{`write(C:\w\*)`, ActionAllow, "write", `c:\W\ok`, true},
		{`read(C:\w\secret:*)`, ActionDeny, "read", `C:\W\Secret\x`, true},
		{`read(C:\w\secret:*)`, ActionAllow, "read", `C:\w\secretive`, false},
		{`read(C:/w/se:*)`, ActionDeny, "read", `C:\w\secret`, true},
		{`read(C:/W/Secret/:*)`, ActionDeny, "read", `c:\w\secret\x`, true},
		{`write(C:\w\a.txt)`, ActionAllow, "write", `c:\w\A.TXT`, true},
		{`write(a.txt)`, ActionAllow, "write", `C:\w\b.txt`, false},
		{`write(C:\w\k*)`, ActionAllow, "write", "C:\\w\\\u212Ax", false},
		{`write(C:\ws\*)`, ActionAllow, "write", "C:\\w\u017F\\x", false},
	} {
		cr, err := compileRule(Rule{Tool: c.rule, Action: c.action})
		if err != nil {
			t.Fatalf("compileRule(%s): %v", c.rule, err)
		}
		s := subject{kind: subjectPath, ok: true, values: []string{c.path}, workDir: `C:\w`}
		if got := cr.matches(c.tool, s); got != c.want {
			t.Errorf("%s %s matches %s = %v, want %v", c.action, c.rule, c.path, got, c.want)
		}
	}
}

// Names compare as Windows compares them: by upper case, not by Unicode
// folding, which also takes the Kelvin sign for k, the long s for s and
// the dotless i for i. A path those make out of the work directory's name
// is another directory, outside it.
func TestWindowsNamesFoldAsWindowsDoes(t *testing.T) {
	for _, c := range []struct {
		p, dir string
		want   bool
	}{
		{"C:\\Wor\u212A\\x", `C:\Work`, false}, {"C:\\\u017Fecret\\x", `C:\secret`, false}, {"C:\\\u0131n\\x", `C:\in`, false},
		{"C:\\\u00C9mile\\x", "C:\\\u00E9mile", true}, {`c:\WORK\x`, `C:\Work`, true},
	} {
		if got := within(c.p, c.dir); got != c.want {
			t.Errorf("within(%q, %q) = %v, want %v", c.p, c.dir, got, c.want)
		}
	}
	if samePath("C:\\wor\u212A", `C:\work`) || !samePath(`C:\WORK`, `c:\work`) {
		t.Errorf("samePath folds what Windows does not, or not what it does")
	}
	if hasPathPrefix("C:\\wor\u212A\\x", `C:\work`) || !hasPathPrefix(`C:\WORK\x`, `c:\work`) {
		t.Errorf("hasPathPrefix folds what Windows does not, or not what it does")
	}
}
