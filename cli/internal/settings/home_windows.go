//go:build windows

package settings

// HomeVar is the environment variable that names the user's home
// directory, under which the default state directory lives: on Windows
// %USERPROFILE% (HOME is unset, or Git Bash's).
const HomeVar = "USERPROFILE"
