//go:build windows

package privatefile

import "testing"

// SetRenameRetried makes every rename retry call f with its attempt's
// number until the test ends.
func SetRenameRetried(t *testing.T, f func(attempt int)) {
	renameRetried = f
	t.Cleanup(func() { renameRetried = nil })
}
