//go:build !long && unix

package e2e

// longTests is false: the stress tests run counts that keep the package
// quick under -race on a busy machine. Build with -tags long (make
// test-long) for the full counts.
const longTests = false
