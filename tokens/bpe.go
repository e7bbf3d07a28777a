package tokens

import "unicode/utf8"

// countPiece returns the number of tokens byte-pair encoding makes of one
// piece: merge the adjacent pair whose merged bytes have the lowest rank
// (the leftmost of equals) until no merged pair is a token, as tiktoken
// does. A piece longer than maxPiece is merged in chunks of at most
// maxPiece bytes (cut at rune starts), which keeps the work and memory of
// a count linear in its bytes.
func (v *vocab) countPiece(p string) int {
	if len(p) <= maxPiece {
		return v.countChunk(p, nil)
	}
	var h heapBuf
	n := 0
	for len(p) > maxPiece {
		e := maxPiece
		for e > 1 && !utf8.RuneStart(p[e]) {
			e--
		}
		n += v.countChunk(p[:e], &h)
		p = p[e:]
	}
	return n + v.countChunk(p, &h)
}

// countChunk merges p whole; h, when not nil, lends the heap merge its
// buffers so that the chunks of one long piece share them.
func (v *vocab) countChunk(p string, h *heapBuf) int {
	if len(p) == 1 || v.rank(p) != noRank {
		return 1
	}
	if len(p) < heapFrom {
		return v.mergeScan(p)
	}
	if h == nil {
		h = &heapBuf{}
	}
	return v.mergeHeap(p, h)
}

// heapFrom is the piece length from which a heap finds the next merge
// (O(n log n)) instead of a scan (O(n²), faster for the short pieces
// that are nearly all of them).
const heapFrom = 128

// maxPiece is the longest piece merged whole. A run of letters or symbols
// without a space (base64, a hex dump, minified code, a long word in a
// script written without spaces) is one piece however long it is; merged
// whole, a heap over millions of parts costs seconds and gigabytes per
// MiB. Merged in chunks, no merge can cross a chunk's end, so the count
// may differ from tiktoken's by about one token per chunk: under 0.3 % of
// the piece's tokens on the long pieces measured (random letters, hex,
// symbols, Cyrillic, Thai, CJK; a repeated "abcdefghij" is the worst),
// and nothing on pieces up to maxPiece bytes, which is every piece of
// ordinary text. tiktoken's own merges rarely reach past a few dozen
// bytes: its longest token is 128 bytes.
const maxPiece = 2048

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
func (v *vocab) mergeHeap(p string, b *heapBuf) int {
	n := len(p)
	next, prev, gen := b.lists(n + 1)
	for i := range next {
		next[i], prev[i], gen[i] = i+1, i-1, 0
	}
	h := &b.heap
	*h = (*h)[:0]
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
	for len(*h) > 0 {
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

// heapBuf holds mergeHeap's lists and heap, reused from one chunk to the
// next.
type heapBuf struct {
	next, prev, gen []int
	heap            mergeHeap
}

// lists returns the three lists, n long each.
func (b *heapBuf) lists(n int) (next, prev, gen []int) {
	if cap(b.next) < n {
		b.next, b.prev, b.gen = make([]int, n), make([]int, n), make([]int, n)
	}
	return b.next[:n], b.prev[:n], b.gen[:n]
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
