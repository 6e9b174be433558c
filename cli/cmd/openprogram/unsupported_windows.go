//go:build windows

package main

// OpenProgram does not run on Windows yet: its token and state-directory
// rules are Unix file permissions (owner, mode 0600, no symlinks). On
// Windows this file is the whole program (main.go is built for other
// systems only), so no dependency is compiled and the build stops at once
// with the sentence below as its error.

func main() {}

const _ = "OpenProgram does not support Windows yet: build for linux or darwin" * 1
