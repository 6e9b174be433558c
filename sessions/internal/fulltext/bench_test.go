package fulltext

import (
	"fmt"
	"strings"
	"testing"
)

// benchDoc is a source of 55 words, like the store benchmarks' documents.
var benchDoc = func() string {
	var ws []string
	for i := range 55 {
		ws = append(ws, fmt.Sprintf("w%dx", (i*7919)%2000))
	}
	return strings.Join(ws, " ")
}()

// BenchmarkScore verifies and scores one document for a two-word query:
// what a search pays for every document it reads.
func BenchmarkScore(b *testing.B) {
	q := Parse("w40x w200x")
	for b.Loop() {
		q.Score(benchDoc)
	}
}

// BenchmarkIndex computes one document's postings: what an append pays.
func BenchmarkIndex(b *testing.B) {
	for b.Loop() {
		Index(benchDoc)
	}
}

// BenchmarkIndexAccented is BenchmarkIndex on a document whose words all
// carry accents: each is folded through NFD and NFC.
func BenchmarkIndexAccented(b *testing.B) {
	doc := strings.ReplaceAll(strings.ReplaceAll(benchDoc, "w", "é"), "x", "ü")
	for b.Loop() {
		Index(doc)
	}
}
