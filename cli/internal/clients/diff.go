package clients

import (
	"fmt"
	"strings"
)

// maxDiffCells bounds the line-by-line table unifiedDiff builds; larger
// inputs are shown as a whole removal and addition.
const maxDiffCells = 4 << 20

// unifiedDiff renders the change from a (labelled from) to b (labelled to)
// as a unified diff with three lines of context, or "" when they are equal.
func unifiedDiff(from, to string, a, b []byte) string {
	if string(a) == string(b) {
		return ""
	}
	x, y := splitLines(string(a)), splitLines(string(b))
	ops := diffLines(x, y)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", from, to)
	const context = 3
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// A hunk: from context lines before the change to context lines after
		// the last change that is at most 2*context lines from the previous.
		start := max(0, i-context)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*context {
				end = min(len(ops), end+context)
				break
			}
			end = run
		}
		ax, by := ops[start].ai, ops[start].bi
		na, nb := 0, 0
		for _, op := range ops[start:end] {
			if op.kind != '+' {
				na++
			}
			if op.kind != '-' {
				nb++
			}
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", hunkStart(ax, na), na, hunkStart(by, nb), nb)
		for _, op := range ops[start:end] {
			out.WriteByte(op.kind)
			out.WriteString(op.line)
			if !strings.HasSuffix(op.line, "\n") {
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = end
	}
	return out.String()
}

// hunkStart is the 1-based first line of a hunk side, or the line before it
// when the side is empty (as diff -u writes it).
func hunkStart(at, n int) int {
	if n == 0 {
		return at
	}
	return at + 1
}

type diffOp struct {
	kind   byte // ' ', '-', '+'
	line   string
	ai, bi int // line numbers (0-based) in a and b where this op stands
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// diffLines is a longest-common-subsequence line diff.
func diffLines(x, y []string) []diffOp {
	n, m := len(x), len(y)
	if (n+1)*(m+1) > maxDiffCells {
		var ops []diffOp
		for i, l := range x {
			ops = append(ops, diffOp{'-', l, i, 0})
		}
		for j, l := range y {
			ops = append(ops, diffOp{'+', l, n, j})
		}
		return ops
	}
	// lcs[i][j] = length of the LCS of x[i:] and y[j:].
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []diffOp
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && x[i] == y[j]:
			ops = append(ops, diffOp{' ', x[i], i, j})
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			ops = append(ops, diffOp{'+', y[j], i, j})
			j++
		default:
			ops = append(ops, diffOp{'-', x[i], i, j})
			i++
		}
	}
	return ops
}
