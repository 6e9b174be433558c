//go:build unix

package bash

// findShell returns the shell named by the Shell option, else bash from
// PATH.
func findShell(configured string) shell {
	if configured == "" {
		configured = "bash"
	}
	return shell{path: configured, kind: kindOf(configured), about: "bash -c"}
}

// describe is the tool's description, which the model reads.
func describe(s shell) string {
	return "Run a shell command (" + s.about + ") in the working directory, in its own process group. Output lines stream as progress; the result holds the output and the exit code. On timeout or cancellation the whole process group is killed (SIGTERM, then SIGKILL)."
}

// commandHelp is the description of the command argument.
func commandHelp(shell) string { return "The command, run as bash -c in the working directory." }

// decodeOutput returns the command's output as UTF-8: on Unix it is
// passed on as it came.
func decodeOutput(b []byte) []byte { return b }
