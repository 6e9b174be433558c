package authz_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/authz"
)

func TestPatchTargets(t *testing.T) {
	cases := []struct {
		name  string
		patch string
		want  []string
	}{
		{"add", "*** Begin Patch\n*** Add File: a.txt\n+hello\n*** End Patch", []string{"a.txt"}},
		{"all ops", `*** Begin Patch
*** Add File: new/a.txt
+x
*** Update File: src/b.go
@@ func b
-old
+new
*** End of File
*** Delete File: c.txt
*** Update File: d.txt
*** Move to: ../outside/d.txt
@@
 ctx
*** End Patch
`, []string{"new/a.txt", "src/b.go", "c.txt", "d.txt", "../outside/d.txt"}},
		{"crlf and blank edges", "\r\n  \n*** Begin Patch\r\n*** Delete File: /etc/passwd\r\n*** End Patch\r\n\n", []string{"/etc/passwd"}},
		{"duplicates once", "*** Begin Patch\n*** Update File: a\n-x\n+y\n*** Update File: a\n*** Move to: a\n*** End Patch", []string{"a"}},
		{"indented markers count", "*** Begin Patch\n*** Update File: a\n @@\n   *** Add File: .bashrc\n*** End Patch", []string{"a", ".bashrc"}},
		{"indented begin and end", "  *** Begin Patch\n\t*** Add File: a\n  *** End Patch  ", []string{"a"}},
		{"content lines are not markers", "*** Begin Patch\n*** Add File: a\n+*** Add File: b\n*** Update File: u\n-*** Delete File: c\n+*** Add File: d\n *** horizontal rule\n*** End Patch", []string{"a", "u"}},
		{"path with inner spaces", "*** Begin Patch\n*** Add File: my file.txt\n*** End Patch", []string{"my file.txt"}},
	}
	for _, c := range cases {
		got, err := authz.PatchTargets(c.patch)
		if err != nil {
			t.Errorf("%s: PatchTargets error: %v", c.name, err)
			continue
		}
		if d := diff(got, c.want); d != "" {
			t.Errorf("%s: PatchTargets:%s", c.name, d)
		}
	}
}

func TestPatchTargetsErrors(t *testing.T) {
	cases := map[string]string{
		"empty":                 "",
		"blank":                 " \n\n",
		"no begin":              "*** Add File: a\n*** End Patch",
		"no end":                "*** Begin Patch\n*** Add File: a\n",
		"only begin":            "*** Begin Patch",
		"no ops":                "*** Begin Patch\n*** End Patch",
		"text after end":        "*** Begin Patch\n*** Add File: a\n*** End Patch\nmore",
		"nested begin":          "*** Begin Patch\n*** Begin Patch\n*** Add File: a\n*** End Patch",
		"end twice":             "*** Begin Patch\n*** Add File: a\n*** End Patch\n*** End Patch",
		"empty path":            "*** Begin Patch\n*** Add File: \n*** End Patch",
		"marker without space":  "*** Begin Patch\n*** Add File:\n*** End Patch",
		"no space after colon":  "*** Begin Patch\n*** Add File:a\n*** End Patch",
		"tab after colon":       "*** Begin Patch\n*** Add File:\ta\n*** End Patch",
		"leading space in path": "*** Begin Patch\n*** Add File:  /etc/passwd\n*** End Patch",
		"trailing space":        "*** Begin Patch\n*** Add File: a \n*** End Patch",
		"nul":                   "*** Begin Patch\n*** Add File: a\x00b\n*** End Patch",
		"lower case marker":     "*** Begin Patch\n*** add file: a\n*** End Patch",
		"unknown marker":        "*** Begin Patch\n*** Rename File: a\n*** End Patch",
		"no space marker":       "*** Begin Patch\n***Add File: a\n*** End Patch",
		"move outside update":   "*** Begin Patch\n*** Add File: a\n*** Move to: b\n*** End Patch",
		"move first":            "*** Begin Patch\n*** Move to: b\n*** End Patch",
		"heredoc wrapper":       "<<'EOF'\n*** Begin Patch\n*** Add File: a\n*** End Patch\nEOF",
		"begin with suffix":     "*** Begin Patch now\n*** Add File: a\n*** End Patch",
		"bare stars column 0":   "*** Begin Patch\n*** Add File: a\n***\n*** End Patch",
		"indented nested begin": "*** Begin Patch\n*** Add File: a\n  *** Begin Patch\n*** End Patch",
		"text outside section":  "*** Begin Patch\nhello\n*** Add File: a\n*** End Patch",
		"add line without plus": "*** Begin Patch\n*** Add File: a\nx\n*** End Patch",
		"delete with content":   "*** Begin Patch\n*** Delete File: a\nx\n*** End Patch",
		"update without change": "*** Begin Patch\n*** Update File: a\n*** End Patch",
		"move after a hunk":     "*** Begin Patch\n*** Update File: a\n-x\n+y\n*** Move to: b\n*** End Patch",
		"empty hunk":            "*** Begin Patch\n*** Update File: a\n@@\n*** End Patch",
		"end of file outside":   "*** Begin Patch\n*** Add File: a\n*** End of File\n*** End Patch",
		"bad hunk line":         "*** Begin Patch\n*** Update File: a\nx\n*** End Patch",
	}
	for name, p := range cases {
		if got, err := authz.PatchTargets(p); err == nil {
			t.Errorf("%s: PatchTargets = %q, nil; want an error", name, got)
		}
	}
}

// TestParsePatch: the operations both the gate and the apply_patch tool use.
func TestParsePatch(t *testing.T) {
	ops, err := authz.ParsePatch("*** Begin Patch\r\n*** Add File: n\r\n+a\r\n+\r\n*** Update File: f\r\n*** Move to: g\r\n@@ -1,3 +1,3 @@\r\n a\r\n-b\r\n+B\r\n\r\n@@ func x\r\n c\r\n\r\n d\r\n*** End of File\r\n*** Delete File: d\r\n\r\n*** End Patch\r\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []authz.PatchOp{
		{Kind: authz.PatchAdd, Path: "n", Lines: []string{"a", ""}, Line: 2},
		{Kind: authz.PatchUpdate, Path: "f", MoveTo: "g", Line: 5, Hunks: []authz.PatchHunk{
			{Line: 7, Lines: []authz.PatchLine{{' ', "a"}, {'-', "b"}, {'+', "B"}}},
			{Header: "func x", Line: 12, EOF: true, Lines: []authz.PatchLine{{' ', "c"}, {' ', ""}, {' ', "d"}}},
		}},
		{Kind: authz.PatchDelete, Path: "d", Line: 17},
	}
	if d := diff(ops, want); d != "" {
		t.Errorf("ParsePatch:%s", d)
	}
}

func TestPatchTargetsMany(t *testing.T) {
	var b strings.Builder
	b.WriteString("*** Begin Patch\n")
	for i := range 10001 {
		fmt.Fprintf(&b, "*** Delete File: f%d\n", i)
	}
	b.WriteString("*** End Patch")
	if _, err := authz.PatchTargets(b.String()); err == nil {
		t.Error("PatchTargets with more than 10000 distinct files: want an error")
	}
}
