//go:build !windows

package shell

// Native is the syntax of the shell people paste the printed commands
// into on this system: a POSIX shell outside Windows.
const Native = POSIX
