package engine

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/fsdrun/fsd/artifact"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/tokens"
)

// A tool result over limits.max-result-tokens (a command's megabyte of
// output, a worker's long report, a big read) would ride along in every
// request until it aged out of the window. Instead it is kept as an
// artifact of the run, and the window shows a head preview, its size and
// the handle the readers page through. The transcript keeps the whole
// result (L5); only requests carry the preview.
const (
	previewLines = 30   // at most this many lines of preview
	previewBytes = 1500 // and at most this many bytes
)

// spool keeps m's text as an artifact when it is over the limit and
// returns the handle ("" when it fits). journaled is the handle a resumed
// run's journal recorded for this result: it is kept, so reads of it that
// the journal replays still work.
func (g *generator) spool(m model.Message, journaled string) (string, error) {
	if g.arts == nil || g.maxResult <= 0 || len(m.Text) <= g.maxResult {
		return "", nil // a token is at least a byte: short texts fit
	}
	if artifact.IsReader(m.Name) {
		// A reader's answer is a page already (at most 16 KiB): keeping
		// it again would leave the model only a preview of the page it
		// asked for.
		return "", nil
	}
	if journaled == "" && tokens.Count(m.Text) <= g.maxResult {
		return "", nil
	}
	h, err := g.arts.KeepResult("", "result of "+m.Name, []byte(m.Text), journaled)
	if err != nil {
		return "", g.errorf("keep the result of %s: %w", m.Name, err)
	}
	return h, nil
}

// spoolPreview is what a request carries for a kept result.
func spoolPreview(m model.Message, rs readerSurface) string {
	head := m.Text
	if i := nthIndex(head, '\n', previewLines); i >= 0 {
		head = head[:i]
	}
	if len(head) > previewBytes {
		head = head[:previewBytes]
		for len(head) > 0 && !utf8.ValidString(head) {
			head = head[:len(head)-1]
		}
	}
	lines := strings.Count(m.Text, "\n")
	if !strings.HasSuffix(m.Text, "\n") {
		lines++
	}
	return fmt.Sprintf("[result kept as artifact %s: %d bytes, %d lines; the first %d bytes follow. "+
		"%s]\n%s\n[… %d more bytes in artifact %s]",
		m.Spool, len(m.Text), lines, len(head), rs.paging, head, len(m.Text)-len(head), m.Spool)
}

// nthIndex returns the index of the n-th sep in s, or -1.
func nthIndex(s string, sep byte, n int) int {
	off := 0
	for k := 0; k < n; k++ {
		i := strings.IndexByte(s[off:], sep)
		if i < 0 {
			return -1
		}
		off += i + 1
	}
	return off - 1
}

// withReaders adds the reader tools to the requests of a generator that
// has seen a kept result (kept, or one in window now) when its tools lack
// them (no handle skill is loaded), so the model can page through it: the
// handle stays readable for the whole run, in the window or not.
func withReaders(tools []model.ToolDef, window []model.Message, kept *bool, rs readerSurface) []model.ToolDef {
	for _, m := range window {
		if m.Spool != "" {
			*kept = true
			break
		}
	}
	if !*kept {
		return tools
	}
	for _, t := range tools {
		if artifact.IsReader(t.Name) {
			return tools
		}
	}
	return append(tools[:len(tools):len(tools)], rs.defs()...)
}
