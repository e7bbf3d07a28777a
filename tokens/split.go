package tokens

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// o200k_base splits text into pieces before merging bytes, with this
// pattern (tiktoken's; alternatives tried in order, the first that
// matches wins, as in a backtracking engine):
//
//	1  [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	2  [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	3  \p{N}{1,3}
//	4   ?[^\s\p{L}\p{N}]+[\r\n/]*
//	5  \s*[\r\n]+
//	6  \s+(?!\S)
//	7  \s+
//
// \s is Unicode White_Space. Go's regexp has no look-ahead and is slow
// for this one (about 4 MB/s), so next matches it by hand; the tests hold
// it to the pattern through Go's regexp (with 6 done by hand) and to
// tiktoken's counts.

// Character classes, as bits.
const (
	cLetter = 1 << iota // \p{L}
	cNumber             // \p{N}
	cSpace              // \s
	cUpper              // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	cLower              // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
)

var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for r := range rune(utf8.RuneSelf) {
		t[r] = classOf(r)
	}
	return t
}()

func classOf(r rune) uint8 {
	switch {
	case unicode.In(r, unicode.Lu, unicode.Lt):
		return cLetter | cUpper
	case unicode.Is(unicode.Ll, r):
		return cLetter | cLower
	case unicode.In(r, unicode.Lm, unicode.Lo):
		return cLetter | cUpper | cLower
	case unicode.IsMark(r):
		return cUpper | cLower
	case unicode.IsNumber(r):
		return cNumber
	case unicode.IsSpace(r):
		return cSpace
	}
	return 0
}

// at decodes the rune at byte i of s (valid UTF-8) and its class.
func at(s string, i int) (r rune, size int, class uint8) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1, asciiClass[c]
	}
	r, size = utf8.DecodeRuneInString(s[i:])
	return r, size, classOf(r)
}

// run returns where the run of runes with any of the class bits, from
// byte i, ends.
func run(s string, i int, bits uint8) int {
	for i < len(s) {
		_, n, c := at(s, i)
		if c&bits == 0 {
			break
		}
		i += n
	}
	return i
}

// pieces calls f with each piece of s (valid UTF-8), in order; they cover
// s.
func pieces(s string, f func(string)) {
	for i := 0; i < len(s); {
		n := next(s, i)
		f(s[i : i+n])
		i += n
	}
}

// next returns the length of the piece at byte i (i < len(s)).
func next(s string, i int) int {
	r, size, c := at(s, i)
	// 1, then 2: an optional prefix (not a line break, letter or digit),
	// then letters; each with the prefix first, then without.
	prefix := c&(cLetter|cNumber) == 0 && r != '\r' && r != '\n'
	for _, alt := range [2]func(string, int) int{lowerEnd, upperEnd} {
		if prefix {
			if e := alt(s, i+size); e > 0 {
				return e + contraction(s, e) - i
			}
		}
		if e := alt(s, i); e > 0 {
			return e + contraction(s, e) - i
		}
	}
	// 3: one to three digits.
	if c&cNumber != 0 {
		e := i + size
		for k := 1; k < 3 && e < len(s); k++ {
			_, n, c := at(s, e)
			if c&cNumber == 0 {
				break
			}
			e += n
		}
		return e - i
	}
	// 4: an optional space, symbols, then line breaks and slashes.
	j := i
	if r == ' ' {
		j++
	}
	if j < len(s) {
		if _, _, c := at(s, j); c&(cSpace|cLetter|cNumber) == 0 {
			e := symbolsEnd(s, j)
			for e < len(s) && (s[e] == '\r' || s[e] == '\n' || s[e] == '/') {
				e++
			}
			return e - i
		}
	}
	// 5, 6, 7: whitespace. With a line break in the run, up to its last
	// line break; else all of it, less its last space when a non-space
	// follows and the run has more than one.
	w, lastBreak, last := i, -1, i
	for w < len(s) {
		r, n, c := at(s, w)
		if c&cSpace == 0 {
			break
		}
		if r == '\r' || r == '\n' {
			lastBreak = w
		}
		last = w
		w += n
	}
	switch {
	case lastBreak >= 0:
		return lastBreak + 1 - i
	case w == i:
		// Not reached: every rune is a letter, mark, digit, symbol or
		// space. A piece of one rune keeps the loop going regardless.
		return size
	case w < len(s) && last > i:
		return last - i
	}
	return w - i
}

// symbolsEnd returns where the run of runes that are neither space,
// letter nor digit, from byte i, ends.
func symbolsEnd(s string, i int) int {
	for i < len(s) {
		_, n, c := at(s, i)
		if c&(cSpace|cLetter|cNumber) != 0 {
			break
		}
		i += n
	}
	return i
}

// lowerEnd matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
// at byte j and returns its end, or -1. The upper run is greedy and gives
// back runes until a lower one can start, so the lower part starts at the
// last position (just after the upper run, or within it) whose rune is
// lower; within the run, the runes after that one are not lower, so the
// lower part is that one rune.
func lowerEnd(s string, j int) int {
	k, lastLower := j, -1
	for k < len(s) {
		_, n, c := at(s, k)
		if c&cUpper == 0 {
			break
		}
		if c&cLower != 0 {
			lastLower = k
		}
		k += n
	}
	if k < len(s) {
		if _, _, c := at(s, k); c&cLower != 0 {
			return run(s, k, cLower)
		}
	}
	if lastLower >= 0 {
		_, n, _ := at(s, lastLower)
		return lastLower + n
	}
	return -1
}

// upperEnd matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*
// at byte j and returns its end, or -1.
func upperEnd(s string, j int) int {
	k := run(s, j, cUpper)
	if k == j {
		return -1
	}
	return run(s, k, cLower)
}

// contraction returns the length of (?i:'s|'t|'re|'ve|'m|'ll|'d) at byte
// i, or 0. Case folding makes 'ſ' (U+017F) an s.
func contraction(s string, i int) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return 0
	}
	lower := func(k int) byte {
		if k < len(s) {
			return s[k] | 0x20
		}
		return 0
	}
	switch lower(i + 1) {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if lower(i+2) == 'e' {
			return 3
		}
	case 'l':
		if lower(i+2) == 'l' {
			return 3
		}
	}
	if strings.HasPrefix(s[i+1:], "ſ") {
		return 1 + len("ſ")
	}
	return 0
}

func isSpace(s string) bool {
	for _, r := range s {
		if !unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// validUTF8 replaces each maximal invalid subsequence of s with U+FFFD,
// as Python's errors="replace" (and tiktoken's decoding) does.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
			n = maximalSubpart(s)
		} else {
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}

// maximalSubpart is the length of the invalid sequence at the start of s
// that one U+FFFD replaces: a lead byte and the continuation bytes that
// could still have completed it (Unicode's "maximal subpart").
func maximalSubpart(s string) int {
	need, lo, hi := 0, byte(0x80), byte(0xBF)
	switch c := s[0]; {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c == 0xED:
		need, hi = 2, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		need = 2
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	i := 1
	for ; i <= need && i < len(s); i++ {
		c := s[i]
		if i == 1 && (c < lo || c > hi) || i > 1 && (c < 0x80 || c > 0xBF) {
			break
		}
	}
	return i
}
