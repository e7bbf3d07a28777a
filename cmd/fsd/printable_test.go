package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/syncbuf"
)

// What tools and models wrote reaches a terminal without its control
// characters: ESC, BEL, CR, DEL and the C1 ones (CSI as U+009B) show in
// caret notation, in a progress line always and in fsd show's output to
// a terminal, even when a write splits a character; tab, newline and
// other text pass as they are, invalid UTF-8 included.
func TestControlCharactersShown(t *testing.T) {
	const (
		in   = "ok \x1b]52;c;cGF3bmVk\x07 \x1b[2Jcafé\tx\r\x7f \u009b31m end \xff"
		want = "ok ^[]52;c;cGF3bmVk^G ^[[2Jcafé\tx^M^? <U+009B>31m end \xff"
	)
	if got := printable(in); got != want {
		t.Errorf("printable = %q, want %q", got, want)
	}
	for cut := range len(in) + 1 {
		var out bytes.Buffer
		pw := &printableWriter{w: &out}
		for _, part := range []string{in[:cut], in[cut:] + "\n"} {
			if n, err := pw.Write([]byte(part)); n != len(part) || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
		if err := pw.flush(); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); got != want+"\n" {
			t.Fatalf("cut at %d: wrote %q, want %q", cut, got, want+"\n")
		}
	}

	var out syncbuf.Buffer
	s := newProgressSink(&out)
	s.Emit(event.Event{Type: event.ToolResult, Tool: "Read", Error: true, Result: "\x1b]0;pwned\x07 refused"})
	s.Emit(event.Event{Type: event.TaskFailed, Task: "t1", Err: "boom \x1b[31mred"})
	s.flush()
	if got := out.String(); strings.ContainsRune(got, 0x1b) || !strings.Contains(got, "tool Read refused: ^[]0;pwned^G refused") || !strings.Contains(got, "boom ^[[31mred") {
		t.Errorf("progress lines %q", got)
	}
	// A line cut at 160 bytes is not cut inside a character.
	if got := firstLine(strings.Repeat("é", 100)); !strings.HasSuffix(got, "é…") || len(got) > 160+len("…") {
		t.Errorf("firstLine = %q", got)
	}
}
