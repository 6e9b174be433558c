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
		{"duplicates once", "*** Begin Patch\n*** Update File: a\n*** Update File: a\n*** End Patch", []string{"a"}},
		{"indented markers count", "*** Begin Patch\n*** Update File: a\n @@\n   *** Add File: .bashrc\n*** End Patch", []string{"a", ".bashrc"}},
		{"indented begin and end", "  *** Begin Patch\n\t*** Add File: a\n  *** End Patch  ", []string{"a"}},
		{"content lines are not markers", "*** Begin Patch\n*** Add File: a\n+*** Add File: b\n-*** Delete File: c\n *** horizontal rule\n*** End Patch", []string{"a"}},
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
	}
	for name, p := range cases {
		if got, err := authz.PatchTargets(p); err == nil {
			t.Errorf("%s: PatchTargets = %q, nil; want an error", name, got)
		}
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
