package tokens

// countPiece returns the number of tokens byte-pair encoding makes of one
// piece: merge the adjacent pair whose merged bytes have the lowest rank
// (the leftmost of equals) until no merged pair is a token, as tiktoken
// does.
func (v *vocab) countPiece(p string) int {
	if len(p) == 1 || v.rank(p) != noRank {
		return 1
	}
	if len(p) < heapFrom {
		return v.mergeScan(p)
	}
	return v.mergeHeap(p)
}

// heapFrom is the piece length from which a heap finds the next merge
// (O(n log n)) instead of a scan (O(n²), faster for the short pieces
// that are nearly all of them). A long run of letters or symbols is one
// piece, so a scan alone would be quadratic in the input.
const heapFrom = 128

type part struct{ start, rank int }

func (v *vocab) mergeScan(p string) int {
	var buf [heapFrom + 1]part
	parts := buf[:0]
	for i := 0; i <= len(p); i++ {
		parts = append(parts, part{i, noRank})
	}
	// pair is the rank of parts i and i+1 merged.
	pair := func(i int) int {
		if i+2 < len(parts) {
			return v.rank(p[parts[i].start:parts[i+2].start])
		}
		return noRank
	}
	for i := range parts {
		parts[i].rank = pair(i)
	}
	for {
		best, min := -1, noRank
		for i, pt := range parts {
			if pt.rank < min {
				best, min = i, pt.rank
			}
		}
		if best < 0 {
			return len(parts) - 1
		}
		parts = append(parts[:best+1], parts[best+2:]...)
		parts[best].rank = pair(best)
		if best > 0 {
			parts[best-1].rank = pair(best - 1)
		}
	}
}

// mergeHeap merges as mergeScan does, keeping the parts in a linked list
// and the candidate merges in a heap ordered by (rank, start); an entry
// whose part has changed since it was pushed is skipped.
func (v *vocab) mergeHeap(p string) int {
	n := len(p)
	next := make([]int, n+1) // the part after part i (n ends the list)
	prev := make([]int, n+1)
	gen := make([]int, n+1) // bumped whenever part i's pair changes or it goes
	for i := range next {
		next[i], prev[i] = i+1, i-1
	}
	var h mergeHeap
	push := func(i int) {
		if next[i] >= n {
			return
		}
		if r := v.rank(p[i:end(next, next[i], n)]); r != noRank {
			h.push(merge{rank: r, start: i, gen: gen[i]})
		}
	}
	for i := 0; i < n; i++ {
		push(i)
	}
	count := n
	for len(h) > 0 {
		m := h.pop()
		if m.gen != gen[m.start] {
			continue
		}
		// Part m.start absorbs the part after it.
		j := next[m.start]
		gen[j]++
		next[m.start] = next[j]
		if next[j] <= n {
			prev[next[j]] = m.start
		}
		count--
		gen[m.start]++
		push(m.start)
		if q := prev[m.start]; q >= 0 {
			gen[q]++
			push(q)
		}
	}
	return count
}

// end is where part i ends: where the next part starts.
func end(next []int, i, n int) int {
	if i >= n {
		return n
	}
	return next[i]
}

type merge struct{ rank, start, gen int }

// mergeHeap is a binary min-heap of merges by (rank, start).
type mergeHeap []merge

func (a merge) before(b merge) bool {
	return a.rank < b.rank || a.rank == b.rank && a.start < b.start
}

func (h *mergeHeap) push(m merge) {
	*h = append(*h, m)
	q := *h
	for i := len(q) - 1; i > 0; {
		parent := (i - 1) / 2
		if !q[i].before(q[parent]) {
			break
		}
		q[i], q[parent] = q[parent], q[i]
		i = parent
	}
}

func (h *mergeHeap) pop() merge {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q = q[:last]
	for i := 0; ; {
		l, r, least := 2*i+1, 2*i+2, i
		if l < len(q) && q[l].before(q[least]) {
			least = l
		}
		if r < len(q) && q[r].before(q[least]) {
			least = r
		}
		if least == i {
			break
		}
		q[i], q[least] = q[least], q[i]
		i = least
	}
	*h = q
	return top
}
