package redact

import (
	"slices"
	"strings"
)

// Mask replaces a secret.
const Mask = "[REDACTED]"

// MinLen is the shortest value treated as a secret: replacing a one- or
// two-character value everywhere would shred ordinary text, and no real key
// is that short.
const MinLen = 6

// Secrets is a set of values to strip.
type Secrets []string

// New keeps the values long enough to be secrets, longest first so that a
// secret containing another is masked whole.
func New(values ...string) Secrets {
	var s Secrets
	for _, v := range values {
		if len(v) >= MinLen && !slices.Contains(s, v) {
			s = append(s, v)
		}
	}
	slices.SortFunc(s, func(a, b string) int { return len(b) - len(a) })
	return s
}

// String returns text with every secret masked.
//
// S2: masked wherever text may leave.
func (s Secrets) String(text string) string {
	for _, v := range s {
		if strings.Contains(text, v) {
			text = strings.ReplaceAll(text, v, Mask)
		}
	}
	return text
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
