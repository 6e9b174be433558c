//go:build unix && !darwin

package authz

// commandForm is a command as deny and ask rules of the command tools
// compare it on Linux and the BSDs: as it is (their file systems, and so
// the program lookup, are case-sensitive).
func commandForm(cmd string) string { return cmd }
