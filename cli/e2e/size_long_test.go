//go:build long && unix

package e2e

// longTests is true under -tags long (make test-long): the stress tests run
// their full counts.
const longTests = true
