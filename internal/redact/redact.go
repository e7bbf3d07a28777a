package redact

import (
	"bytes"
	"encoding/json"
	"html"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Mask replaces a secret: a reader (a model reading a tool's result
// included) sees that something was there.
const Mask = "[REDACTED]"

// MinLen is the shortest value masked, in bytes: masking a short value
// such as "1" or "true" everywhere would shred ordinary text, and no real
// key is that short.
const MinLen = 8

// FromEnv returns the values of the variables in environ (as from
// os.Environ) whose names end in _KEY, _TOKEN or _SECRET: the provider
// API keys and other credentials fsd itself may hold.
//
// S3: *_KEY, *_TOKEN and *_SECRET values are secrets.
func FromEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || value == "" {
			continue
		}
		up := strings.ToUpper(name)
		if strings.HasSuffix(up, "_KEY") || strings.HasSuffix(up, "_TOKEN") || strings.HasSuffix(up, "_SECRET") {
			out = append(out, value)
		}
	}
	return out
}

// Secrets is a fixed set of values to mask. The zero value masks nothing.
type Secrets struct {
	values []string // MinLen or longer, longest first
	forms  []string // values in every form String masks
	r      *strings.Replacer
}

// New keeps the values long enough to be secrets.
func New(values ...string) Secrets {
	var s Secrets
	for _, v := range values {
		if len(v) >= MinLen && !slices.Contains(s.values, v) {
			s.values = append(s.values, v)
		}
	}
	if len(s.values) == 0 {
		return s
	}
	// Longest first, forms included, so that a secret containing another
	// is masked whole (a Replacer tries its pairs in order at each place).
	slices.SortStableFunc(s.values, func(a, b string) int { return len(b) - len(a) })
	var forms []string
	for _, v := range s.values {
		for _, f := range formsOf(v) {
			if !slices.Contains(forms, f) {
				forms = append(forms, f)
			}
		}
	}
	slices.SortStableFunc(forms, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Mask)
	}
	s.r = strings.NewReplacer(pairs...)
	s.forms = forms
	return s
}

// formsOf is v as it is and as the encoders text passes through escape
// it: JSON (with and without HTML escapes), HTML and URL queries.
func formsOf(v string) []string {
	forms := []string{v}
	var b bytes.Buffer
	for _, escapeHTML := range []bool{true, false} {
		b.Reset()
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(escapeHTML)
		if e.Encode(v) == nil {
			q := strings.TrimSuffix(b.String(), "\n")
			forms = append(forms, q[1:len(q)-1])
		}
	}
	return append(forms, html.EscapeString(v), url.QueryEscape(v), url.PathEscape(v))
}

// Len is how many values are masked.
func (s Secrets) Len() int { return len(s.values) }

// Values are the values masked, longest first (not their escaped forms).
func (s Secrets) Values() []string { return s.values }

// String returns text with every secret masked, in every form.
//
// S2, S8: masked wherever text may leave.
func (s Secrets) String(text string) string {
	if s.r == nil || text == "" {
		return text
	}
	return s.r.Replace(text)
}

// Bytes is String for bytes; b comes back unchanged when it holds no
// secret.
func (s Secrets) Bytes(b []byte) []byte {
	if s.r == nil || len(b) == 0 {
		return b
	}
	if m := s.r.Replace(string(b)); m != string(b) {
		return []byte(m)
	}
	return b
}

// Error returns err with its message masked. errors.Is and errors.As still
// see the original chain (a caller testing for context.Canceled must keep
// working); only the text changes.
func (s Secrets) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := s.String(msg); clean != msg {
		return &redacted{msg: clean, err: err}
	}
	return err
}

type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }

// Stream masks text that comes in pieces, as a model's streamed answer
// does: a secret split across pieces is masked as it would be whole,
// where masking each piece alone let both halves through. Write hands on
// what cannot be part of a secret and holds back the end that could begin
// one, until the next piece or Flush shows what it is.
type Stream struct {
	secrets Secrets
	out     func(string)
	held    string
}

// NewStream masks the pieces written to it with s and hands them to out.
func NewStream(s Secrets, out func(string)) *Stream {
	return &Stream{secrets: s, out: out}
}

// Write masks piece, with what was held before it, and hands on all but
// the end that could begin a secret.
//
// S2: a secret streamed in pieces is masked.
func (m *Stream) Write(piece string) {
	text := m.secrets.String(m.held + piece)
	n := m.secrets.begun(text)
	m.held = text[len(text)-n:]
	if out := text[:len(text)-n]; out != "" {
		m.out(out)
	}
}

// Flush hands on what is held: the text ended, so it is no secret.
func (m *Stream) Flush() {
	if m.held != "" {
		m.out(m.held)
		m.held = ""
	}
}

// Drop forgets what is held: the text it belonged to is void.
func (m *Stream) Drop() { m.held = "" }

// begun is the length of the longest end of text that begins a secret,
// in any form, without being all of it: what a next piece may complete.
func (s Secrets) begun(text string) int {
	n := 0
	for _, f := range s.forms {
		for k := min(len(f)-1, len(text)); k > n; k-- {
			if strings.HasSuffix(text, f[:k]) {
				n = k
				break
			}
		}
	}
	return n
}

// Set is the secrets of a run, which grow as they become known (a skill
// loaded later brings the values its tools take). It is safe for
// concurrent use; a nil *Set masks nothing.
type Set struct {
	mu     sync.Mutex // serialises Add
	values []string
	cur    atomic.Pointer[Secrets]
}

// NewSet returns a Set holding values.
func NewSet(values ...string) *Set {
	s := &Set{}
	s.Add(values...)
	return s
}

// Add adds values to the set; short and known ones change nothing.
func (s *Set) Add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	grew := false
	for _, v := range values {
		if len(v) >= MinLen && !slices.Contains(s.values, v) {
			s.values = append(s.values, v)
			grew = true
		}
	}
	if grew || s.cur.Load() == nil {
		sec := New(s.values...)
		s.cur.Store(&sec)
	}
}

// Secrets returns the set as it is now.
func (s *Set) Secrets() Secrets {
	if s == nil {
		return Secrets{}
	}
	if p := s.cur.Load(); p != nil {
		return *p
	}
	return Secrets{}
}

// String masks text with the set as it is now (Secrets.String).
func (s *Set) String(text string) string { return s.Secrets().String(text) }

// Error masks err's message with the set as it is now (Secrets.Error).
func (s *Set) Error(err error) error { return s.Secrets().Error(err) }
