package prompttest

import (
	"strings"
)

// Diff renders a line diff of want and got: lines only in want start
// with "- ", lines only in got with "+ ", common lines with "  ". It is
// a longest-common-subsequence diff, quadratic in the line counts, which
// the values of a prompt test keep small.
func Diff(want, got string) string {
	a, b := lines(want), lines(got)
	// lcs[i][j] is the common subsequence length of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out.WriteString("  " + a[i] + "\n")
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			out.WriteString("- " + a[i] + "\n")
			i++
		default:
			out.WriteString("+ " + b[j] + "\n")
			j++
		}
	}
	return out.String()
}

// lines splits s into lines; a final newline shows as a last empty line
// only when it is the difference, so "a" and "a\n" still differ visibly.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	ls := strings.Split(s, "\n")
	for i, l := range ls {
		if l == "" && i == len(ls)-1 {
			ls[i] = "⏎ (final newline)"
		}
	}
	return ls
}
