//go:build long

package fulltext

// longTests is true under -tags long (make test-long): the randomised
// comparisons run on their full corpora.
const longTests = true
