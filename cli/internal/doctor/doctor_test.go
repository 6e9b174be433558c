package doctor

import (
	"strings"
	"testing"
)

// Print aligns the names (at least 22 wide), puts a fix under each check
// that is not OK, keeps model-controlled text on one line, and counts only
// the failures.
func TestPrint(t *testing.T) {
	var b strings.Builder
	failed := Print(&b, []Check{
		{Name: "state directory", OK: true, Info: "/s (0700)", Fix: "not shown"},
		{Name: "model provider", Warn: true, Info: "slow\nanswer", Fix: "wait"},
		{Name: "a name longer than twenty-two", Info: "broken", Fix: "repair"},
		{Name: "store", Info: "unreachable"},
	})
	want := "ok    state directory               /s (0700)\n" +
		"warn  model provider                slow answer\n" +
		"                                    fix: wait\n" +
		"FAIL  a name longer than twenty-two broken\n" +
		"                                    fix: repair\n" +
		"FAIL  store                         unreachable\n"
	if got := b.String(); got != want {
		t.Errorf("Print wrote\n%s\nwant\n%s", got, want)
	}
	if failed != 2 {
		t.Errorf("Print = %d failed, want 2", failed)
	}
}
