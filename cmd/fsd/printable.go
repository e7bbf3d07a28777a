package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// A run's record holds what tools and models wrote, escape sequences
// included: printed raw to a terminal, a tool's output could set its
// title, move the cursor over earlier lines or, on some terminals, write
// the clipboard (OSC 52). What fsd show prints to a terminal, and every
// progress line, shows control characters but tab and newline in caret
// notation (ESC as ^[) instead. JSON output and other pipes get the
// bytes as recorded.
//
// S9: no control character of a record reaches a terminal.

// caret appends c, a control character, to b as ^X (^? for DEL), or as
// <U+0085> for a C1 one.
func caret(b []byte, c rune) []byte {
	switch {
	case c == 0x7f:
		return append(b, '^', '?')
	case c < 0x20:
		return append(b, '^', byte(c)+'@')
	}
	return fmt.Appendf(b, "<U+%04X>", c)
}

// shown reports whether r prints as itself: not a C0 control but tab and
// newline, not DEL, not a C1 control.
func shown(r rune) bool {
	return r >= 0x20 && r != 0x7f && (r < 0x80 || r > 0x9f) || r == '\t' || r == '\n'
}

// printable is s with its control characters in caret notation.
func printable(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return !shown(r) })
	if i < 0 {
		return s
	}
	b := append(make([]byte, 0, len(s)+8), s[:i]...)
	for s = s[i:]; s != ""; {
		r, n := utf8.DecodeRuneInString(s)
		if shown(r) || r == utf8.RuneError {
			b = append(b, s[:n]...) // invalid bytes as they were: no control
		} else {
			b = caret(b, r)
		}
		s = s[n:]
	}
	return string(b)
}

// printableWriter writes through to w what printable makes of it. A
// character split across two writes is held until the second.
type printableWriter struct {
	w    io.Writer
	part []byte // a character's first bytes, from the last write
	buf  []byte
}

func (p *printableWriter) Write(data []byte) (int, error) {
	in := data
	if len(p.part) > 0 {
		in = append(p.part, data...)
		p.part = nil
	}
	b := p.buf[:0]
	for len(in) > 0 {
		r, n := utf8.DecodeRune(in)
		if r == utf8.RuneError && n == 1 && !utf8.FullRune(in) {
			p.part = append(p.part[:0], in...) // its rest comes next
			break
		}
		if shown(r) || r == utf8.RuneError {
			b = append(b, in[:n]...) // invalid bytes as they were: no control
		} else {
			b = caret(b, r)
		}
		in = in[n:]
	}
	p.buf = b
	if _, err := p.w.Write(b); err != nil {
		return 0, err
	}
	return len(data), nil
}

// flush writes what is held of a character the output ended inside:
// bytes that make none, shown as they were.
func (p *printableWriter) flush() error {
	if len(p.part) == 0 {
		return nil
	}
	_, err := p.w.Write(p.part)
	p.part = nil
	return err
}
