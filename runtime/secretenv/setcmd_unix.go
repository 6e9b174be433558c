//go:build unix

package secretenv

// SetCommand is the command a person types in their shell to give the
// environment variable name the value value before starting openprogram,
// for the texts that ask for a missing one: on Unix the POSIX shell's
// export NAME=value.
func SetCommand(name, value string) string { return "export " + name + "=" + value }
