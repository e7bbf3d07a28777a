package main

import (
	"context"
	"errors"
	"strings"
	"time"
)

// errRunTimeout is the cause of a run's context when --timeout expires.
var errRunTimeout = errors.New("run timed out")

// withRunTimeout bounds the run's wall-clock time; 0 means no bound.
func withRunTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, d, errRunTimeout)
}

// timedOut reports whether a run failed because --timeout expired, and
// not, say, because of Ctrl-C: the engine returns the context error as
// whichever generator noticed it first saw it, and the user should read
// one plain line instead.
func timedOut(ctx context.Context, err error) bool {
	return err != nil && errors.Is(context.Cause(ctx), errRunTimeout)
}

// shortDuration prints 5m rather than 5m0s, the duration as a user types it.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
