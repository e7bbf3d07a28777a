package redact

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestSecrets(t *testing.T) {
	s := New("sk-abcdef123", "sk-abcdef", "ab", "")
	if got, want := s.String("key sk-abcdef123 and sk-abcdef, ab"), "key [REDACTED] and [REDACTED], ab"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	err := s.Error(fmt.Errorf("auth sk-abcdef123 failed: %w", context.Canceled))
	if err.Error() != "auth [REDACTED] failed: context canceled" || !errors.Is(err, context.Canceled) {
		t.Errorf("Error = %v (Is canceled: %v)", err, errors.Is(err, context.Canceled))
	}
	if s.Error(nil) != nil {
		t.Error("Error(nil) != nil")
	}
}
