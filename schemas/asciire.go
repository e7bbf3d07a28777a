package schemas

import (
	"fmt"
	"strings"
	"unicode"
)

// asciiPattern rewrites a pattern whose Unicode classes (\p{Ll}, \pN)
// all sit in bracket expressions into one that matches an ASCII string
// exactly when the pattern does: each class becomes its ASCII members.
// Compiling a Unicode class builds its whole table (the skill id's
// pattern takes about a millisecond to compile, against tens of
// microseconds for its ASCII form), and a manifest's ids and names are
// nearly always ASCII. A character of an ASCII string matches a bracket
// expression exactly when it matches the ASCII part of each class in it;
// everything else in a Go pattern (\w, \d, \b, literals, .) treats an
// ASCII string alike in both. ok is false where the rewrite is not
// simple: no Unicode class, a negated class or bracket holding one,
// flags, a POSIX class, a class with no ASCII member alone in its
// bracket (Z5).
func asciiPattern(p string) (string, bool) {
	if !strings.Contains(p, `\p`) || strings.Contains(p, `\P`) || strings.Contains(p, "(?") || strings.Contains(p, "[:") {
		return "", false
	}
	var out strings.Builder
	inBracket, negated, members := false, false, 0
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p) && p[i+1] == 'p':
			if !inBracket || negated {
				return "", false
			}
			name, n := className(p[i+2:])
			table := unicode.Categories[name]
			if table == nil {
				table = unicode.Scripts[name]
			}
			if table == nil {
				return "", false
			}
			for r := rune(0); r < 0x80; r++ {
				if unicode.Is(table, r) {
					fmt.Fprintf(&out, `\x{%x}`, r)
					members++
				}
			}
			i += 1 + n
		case c == '\\' && i+1 < len(p):
			out.WriteString(p[i : i+2])
			members++
			i++
		case c == '[' && !inBracket:
			inBracket, negated, members = true, strings.HasPrefix(p[i+1:], "^"), 0
			out.WriteByte(c)
			if negated {
				out.WriteByte('^')
				i++
			}
			if strings.HasPrefix(p[i+1:], "]") { // a leading ] is a member
				out.WriteByte(']')
				members++
				i++
			}
		case c == ']' && inBracket:
			if members == 0 {
				return "", false
			}
			inBracket = false
			out.WriteByte(c)
		default:
			out.WriteByte(c)
			members++
		}
	}
	return out.String(), !inBracket
}

// className reads the name after \p: {Name} or one letter; n is how many
// bytes it took.
func className(s string) (name string, n int) {
	if strings.HasPrefix(s, "{") {
		end := strings.IndexByte(s, '}')
		if end < 0 || strings.HasPrefix(s, "{^") {
			return "", 0
		}
		return s[1:end], end + 1
	}
	if s == "" {
		return "", 0
	}
	return s[:1], 1
}
