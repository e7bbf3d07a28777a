package diag

import (
	"fmt"
	"sort"
	"strings"
)

// Pos is a place in a file. Line and Col are 1-based; 0 means unknown.
type Pos struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Col  int    `json:"col"`
}

// String renders the position as file:line:col.
func (p Pos) String() string {
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Severity says whether a diagnostic fails validation.
type Severity int

const (
	// Error fails validation.
	Error Severity = iota
	// Warning is reported but does not fail validation unless --strict.
	Warning
)

// String returns "error" or "warning".
func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "error"
}

// Diagnostic is one problem at one place.
type Diagnostic struct {
	Pos      Pos
	Severity Severity
	// Kind is a short, stable class of problem ("syntax", "schema",
	// "unknown-key", "id", "ref", "cycle", ...), shown in brackets.
	Kind    string
	Message string
	// Hint is an optional suggestion ("did you mean ...").
	Hint string
}

// String renders the diagnostic as `file:line:col: message [kind]`, with
// the hint appended after a semicolon when there is one.
func (d Diagnostic) String() string {
	var b strings.Builder
	b.WriteString(d.Pos.String())
	b.WriteString(": ")
	if d.Severity == Warning {
		b.WriteString("warning: ")
	}
	b.WriteString(d.Message)
	if d.Hint != "" {
		b.WriteString("; ")
		b.WriteString(d.Hint)
	}
	if d.Kind != "" {
		b.WriteString(" [")
		b.WriteString(d.Kind)
		b.WriteString("]")
	}
	return b.String()
}

// Errorf builds an error diagnostic at pos.
func Errorf(pos Pos, kind, format string, args ...any) Diagnostic {
	return Diagnostic{Pos: pos, Severity: Error, Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// Warnf builds a warning diagnostic at pos.
func Warnf(pos Pos, kind, format string, args ...any) Diagnostic {
	return Diagnostic{Pos: pos, Severity: Warning, Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// List is a set of diagnostics. A non-empty List is an error.
type List []Diagnostic

// Error joins the diagnostics, one per line.
func (l List) Error() string {
	s := make([]string, len(l))
	for i, d := range l {
		s[i] = d.String()
	}
	return strings.Join(s, "\n")
}

// Sort orders the list by file, line, column, then message, so output is
// deterministic.
func (l List) Sort() {
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i], l[j]
		if a.Pos.File != b.Pos.File {
			return a.Pos.File < b.Pos.File
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		if a.Pos.Col != b.Pos.Col {
			return a.Pos.Col < b.Pos.Col
		}
		return a.Message < b.Message
	})
}

// Dedupe drops every diagnostic equal to an earlier one, keeping the
// order: two passes (a schema and a semantic check, two workflows sharing
// a skill) often find the same problem at the same place, and a reader
// should see it once. It reuses l's storage.
func (l List) Dedupe() List {
	seen := make(map[Diagnostic]bool, len(l))
	out := l[:0]
	for _, d := range l {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// Errors returns only the error-severity diagnostics; strict counts
// warnings as errors too.
func (l List) Errors(strict bool) List {
	var out List
	for _, d := range l {
		if d.Severity == Error || strict {
			out = append(out, d)
		}
	}
	return out
}

// Err returns the list's errors as an error, or nil when there are none.
// Warnings alone are not an error.
func (l List) Err() error {
	if e := l.Errors(false); len(e) > 0 {
		return e
	}
	return nil
}
