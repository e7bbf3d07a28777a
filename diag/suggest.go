package diag

import (
	"fmt"
	"strings"
)

// Suggest returns the known name closest to key, or "" when none is close
// enough to be a plausible typo. It tries spelling variants first
// (max_steps, maxSteps → max-steps), then synonyms (a spelling people
// write from habit, lower case without - or _, mapped to a known name; nil
// for none), then an abbreviation, then edit distance.
func Suggest(key string, known []string, synonyms map[string]string) string {
	norm := func(s string) string { return separators.Replace(strings.ToLower(s)) }
	nk := norm(key)
	for _, k := range known {
		if norm(k) == nk {
			return k
		}
	}
	if s, ok := synonyms[nk]; ok {
		for _, k := range known {
			if k == s {
				return k
			}
		}
	}
	if len(nk) >= 4 {
		// An abbreviation: desc → description.
		for _, k := range known {
			if strings.HasPrefix(norm(k), nk) {
				return k
			}
		}
	}
	best, bestD := "", 0
	for _, k := range known {
		d := levenshtein(nk, norm(k))
		if best == "" || d < bestD {
			best, bestD = k, d
		}
	}
	limit := 2
	if len(nk) >= 8 {
		limit = 3
	}
	if best != "" && bestD <= limit && bestD < len(nk) {
		return best
	}
	return ""
}

// separators are what Suggest's comparisons ignore. One Replacer for all
// calls (it is safe for concurrent use): building one per name compared
// was most of what validating a file of many unknown keys cost.
var separators = strings.NewReplacer("-", "", "_", "", " ", "")

// DidYouMean is the hint for an unknown name, `did you mean "x"?`, or ""
// (see Suggest).
func DidYouMean(name string, known []string, synonyms map[string]string) string {
	if s := Suggest(name, known, synonyms); s != "" {
		return fmt.Sprintf("did you mean %q?", s)
	}
	return ""
}

// levenshtein is the edit distance between a and b (bytes; names are
// mostly ASCII, and a typo of one is still near).
func levenshtein(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		// Long strings are never typos of short keys; skip the O(n·m) work.
		return max(len(a), len(b))
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
