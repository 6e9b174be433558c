//go:build !windows

package wine

// Detected reports whether the program runs under Wine: never, off Windows.
func Detected() bool { return false }
