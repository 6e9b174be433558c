//go:build windows

package secretenv

// SetCommand is the command a person types in their shell to give the
// environment variable name the value value before starting openprogram,
// for the texts that ask for a missing one: on Windows PowerShell's
// $env:NAME = "value" (PowerShell and cmd have no export).
func SetCommand(name, value string) string { return "$env:" + name + ` = "` + value + `"` }
