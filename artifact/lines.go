package artifact

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/fsdrun/fsd/tokens"
)

// The line readers work on any artifact. A line is what lies between
// newlines, with a "\r" before the "\n" dropped, so CRLF files read like
// LF ones.

func lineCount(d *doc) int {
	if len(d.src) == 0 {
		return 0
	}
	return len(d.lines)
}

// line returns line i (1-based) without its line ending.
func (d *doc) line(i int) string { return string(d.lineBytes(i)) }

// lineBytes is line without a copy, for matching.
func (d *doc) lineBytes(i int) []byte {
	start := d.lines[i-1]
	end := len(d.src)
	if i < len(d.lines) {
		end = d.lines[i]
	}
	b := bytes.TrimSuffix(d.src[start:end], []byte{'\n'})
	return bytes.TrimSuffix(b, []byte{'\r'})
}

// writeLines writes lines from..to (1-based, inclusive) and stops before
// MaxOutput; it returns the last line written whole.
func (d *doc) writeLines(sb *strings.Builder, from, to int) (last int) {
	for i := from; i <= to; i++ {
		l := d.line(i)
		if sb.Len()+len(l)+1 > MaxOutput {
			if i == from { // one huge line: show its start rather than nothing
				sb.WriteString(validPrefix(l, MaxOutput))
				sb.WriteString("\n")
			}
			return i - 1
		}
		sb.WriteString(l)
		sb.WriteString("\n")
	}
	return to
}

func linesArg(a *args) (int, error) {
	if a.Lines == nil {
		return DefaultLines, nil
	}
	if *a.Lines < 1 || *a.Lines > MaxLines {
		return 0, fmt.Errorf("lines must be between 1 and %d, not %d", MaxLines, *a.Lines)
	}
	return *a.Lines, nil
}

func head(d *doc, a *args) (string, error) {
	n, err := linesArg(a)
	if err != nil {
		return "", err
	}
	total := lineCount(d)
	if total == 0 {
		return "(empty artifact)", nil
	}
	var sb strings.Builder
	last := d.writeLines(&sb, 1, min(n, total))
	if last < total {
		writeLineNote(&sb, d, a, 1, last, total)
	}
	return sb.String(), nil
}

func tail(d *doc, a *args) (string, error) {
	n, err := linesArg(a)
	if err != nil {
		return "", err
	}
	total := lineCount(d)
	if total == 0 {
		return "(empty artifact)", nil
	}
	from := max(total-n+1, 1)
	// Fit the window into MaxOutput from the end: tail keeps the last lines.
	size := 0
	for i := total; i >= from; i-- {
		size += len(d.line(i)) + 1
		if size > MaxOutput && i < total {
			from = i + 1
			break
		}
	}
	var sb strings.Builder
	last := d.writeLines(&sb, from, total)
	if from > 1 || last < total {
		writeLineNote(&sb, d, a, from, last, total)
	}
	return sb.String(), nil
}

func writeLineNote(sb *strings.Builder, d *doc, a *args, from, last, total int) {
	if last < from {
		// Not even one whole line fitted.
		fmt.Fprintf(sb, "[line %d is longer than %d bytes and was cut; read it with %s offset=%d]\n", from, MaxOutput, a.call("cat"), d.lines[from-1])
		return
	}
	fmt.Fprintf(sb, "[lines %d-%d of %d", from, last, total)
	if last < total {
		next := d.lines[last]
		fmt.Fprintf(sb, "; read on with %s offset=%d", a.call("cat"), next)
	}
	sb.WriteString("]\n")
}

func grep(d *doc, a *args) (string, error) {
	pat := *a.Pattern
	if pat == "" {
		return "", fmt.Errorf("pattern is empty")
	}
	if len(pat) > MaxPattern {
		return "", fmt.Errorf("pattern is %d bytes; at most %d are allowed", len(pat), MaxPattern)
	}
	if a.Context < 0 || a.Context > MaxContext {
		return "", fmt.Errorf("context must be between 0 and %d, not %d", MaxContext, a.Context)
	}
	if a.IgnoreCase {
		pat = "(?i)" + pat
	}
	// Go's regexp is RE2: matching is linear in the input, so no pattern
	// can make a search run away.
	re, err := regexp.Compile(pat)
	if err != nil {
		return "", fmt.Errorf("invalid pattern: %v", err)
	}
	total := lineCount(d)
	var hits []int
	matches := 0
	for i := 1; i <= total; i++ {
		if re.Match(d.lineBytes(i)) {
			matches++
			if len(hits) < MaxMatches {
				hits = append(hits, i)
			}
		}
	}
	var sb strings.Builder
	shown, lastTo := 0, 0
	for _, h := range hits {
		if h <= lastTo { // already shown as context of the previous match
			shown++
			continue
		}
		from, to := max(h-a.Context, lastTo+1), min(h+a.Context, total)
		var block strings.Builder
		if a.Context > 0 && lastTo > 0 && from > lastTo+1 {
			block.WriteString("--\n")
		}
		for j := from; j <= to; j++ {
			l := d.line(j)
			sep := "-"
			if j == h || re.MatchString(l) {
				sep = ":"
			}
			block.WriteString(strconv.Itoa(j) + sep + clip(l, MaxLineShown) + "\n")
		}
		if sb.Len()+block.Len() > MaxOutput {
			break
		}
		sb.WriteString(block.String())
		shown++
		lastTo = to
	}
	if matches == 0 {
		return fmt.Sprintf("no line of %s matches %q", d.name, clip(*a.Pattern, 80)), nil
	}
	if shown < matches {
		fmt.Fprintf(&sb, "[%d matching lines, %d shown; narrow the pattern to see the rest]\n", matches, shown)
	}
	return sb.String(), nil
}

func cat(d *doc, a *args) (string, error) {
	limit, err := limitArg(a)
	if err != nil {
		return "", err
	}
	if a.Offset < 0 || a.Offset > len(d.src) {
		return "", fmt.Errorf("offset %d is outside the artifact (%d bytes)", a.Offset, len(d.src))
	}
	if len(d.src) == 0 {
		return "(empty artifact)", nil
	}
	off := a.Offset
	for off > 0 && off < len(d.src) && !utf8.RuneStart(d.src[off]) {
		off++
	}
	// Convert only the page (plus a rune's slack), not the whole artifact.
	chunk := string(d.src[off:min(off+limit+utf8.UTFMax, len(d.src))])
	return page(chunk, 0, limit, a.call("cat"), off, len(d.src)), nil
}

func limitArg(a *args) (int, error) {
	if a.Limit == nil {
		return MaxOutput, nil
	}
	if *a.Limit < 1 || *a.Limit > MaxOutput {
		return 0, fmt.Errorf("limit must be between 1 and %d, not %d", MaxOutput, *a.Limit)
	}
	return *a.Limit, nil
}

// page returns s[offset:offset+limit], moved to rune boundaries, with a
// note when more follows. s may be a window of a larger text: base is
// where s starts in it and total its length, for the note.
func page(s string, offset, limit int, tool string, base, total int) string {
	for offset < len(s) && offset > 0 && !utf8.RuneStart(s[offset]) {
		offset++
	}
	end := min(offset+limit, len(s))
	if end < len(s) {
		end = offset + len(validPrefix(s[offset:], end-offset))
		if end == offset { // limit smaller than one rune
			_, n := utf8.DecodeRuneInString(s[offset:])
			end = offset + n
		}
	}
	out := s[offset:end]
	if base+end < total {
		out += fmt.Sprintf("\n[bytes %d-%d of %d; read on with %s offset=%d]", base+offset, base+end, total, tool, base+end)
	}
	return out
}

// validPrefix cuts s to at most n bytes without splitting a rune.
func validPrefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// size answers the three counts at once: what byteLength, lineTotal and
// estimateTokens answer one at a time on the named surface.
func size(d *doc, a *args) (string, error) {
	parts := make([]string, 0, 3)
	for _, f := range []func(*doc, *args) (string, error){byteLength, lineTotal, estimateTokens} {
		p, _ := f(d, a)
		parts = append(parts, p)
	}
	return strings.Join(parts, ", "), nil
}

func byteLength(d *doc, _ *args) (string, error) { return fmt.Sprintf("%d bytes", len(d.src)), nil }

func lineTotal(d *doc, _ *args) (string, error) { return fmt.Sprintf("%d lines", lineCount(d)), nil }

func estimateTokens(d *doc, _ *args) (string, error) {
	return fmt.Sprintf("%d tokens (%s)", d.tokenCount(), tokens.Encoding), nil
}
