//go:build windows

package authz_test

import (
	"os"
	"testing"

	"github.com/openprogram/openprogram/internal/privatefile"
	"github.com/openprogram/openprogram/internal/wine"
)

// checkOwnerOnly requires path to be owned by the current user with a DACL
// that lets nobody else in (under Wine, which keeps no DACLs, it checks
// nothing).
func checkOwnerOnly(t *testing.T, path string, _ bool) {
	t.Helper()
	if wine.Detected() {
		t.Logf("not checking the DACL of %s: Wine keeps none (a real Windows runner checks it)", path)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := privatefile.CheckPrivate(f); err != nil {
		t.Errorf("%s is not owner-only: %v", path, err)
	}
}

// modeRule says why the Unix mode cases do not apply.
const modeRule = "Unix mode bits are not the rule on Windows (the DACL is: internal/privatefile's Windows tests)"

// symlinkOK skips the test when os.Symlink reported success and made
// nothing (Wine 8).
func symlinkOK(t *testing.T, link string) {
	t.Helper()
	if _, err := os.Lstat(link); err != nil && wine.Detected() {
		t.Skip("Wine 8's CreateSymbolicLink reports success and makes nothing: a real Windows runner checks this")
	}
}
