package natsboard

import (
	"context"
	"testing"
	"time"
)

// TestRetryBoundsEachAttempt: a request whose reply never comes (a
// publish ack lost to a reconnect, or to a stream that stores nothing) is
// made again after attemptWait, instead of waiting until the caller's
// context ends: a run with --timeout 1h would otherwise wait an hour for
// one task message's ack.
//
// It sets attemptWait, which every coordinator and worker reads, so it
// does not run in parallel (TestWatchRestartsWhenConsumerLost says how).
func TestRetryBoundsEachAttempt(t *testing.T) {
	defer func(d time.Duration) { attemptWait = d }(attemptWait)
	attemptWait = 50 * time.Millisecond
	// The run's deadline, far off; the test's hang guard too.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	attempts := 0
	err := retry(ctx, func(ctx context.Context) error {
		attempts++
		if attempts == 1 {
			<-ctx.Done() // the reply that never comes
			return ctx.Err()
		}
		return nil
	})
	if err != nil || attempts != 2 {
		t.Errorf("retry = %v after %d attempts; want the second attempt to succeed", err, attempts)
	}
}
