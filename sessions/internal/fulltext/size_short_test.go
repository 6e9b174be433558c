//go:build !long

package fulltext

// longTests is false: the randomised comparisons run on small corpora so
// that the package stays quick under -race on a busy machine. Build with
// -tags long (make test-long) for the full sizes.
const longTests = false
