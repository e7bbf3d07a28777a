package natsboard

import (
	"context"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/testlong"
)

// TestResumeAfterPoolQueueExpired: the only worker of a pool dies mid-task
// and its pool's queue is removed (by hand, `nats consumer rm`) before
// another starts, which creates it again. The new worker's queue
// delivers the message as a first delivery, yet it resumes the task from
// its journal: the journaled command does not run again.
func TestResumeAfterPoolQueueExpired(t *testing.T) {
	testlong.Skip(t)
	k := killMidTask(t)
	run, marks := k.run, k.marks
	must(t, k.r.js.DeleteConsumer(context.Background(), TaskStream, consumerName(">")))
	b := worker(t, k.srv.ClientURL(), "wb", "--concurrency", "1", "--trust", k.skills)
	run.wait(t)
	if got := lastLine(run.output()); got != "joined join" {
		t.Errorf("answer %q", got)
	}
	if n := countLines(t, marks); n != 1 {
		t.Errorf("mark ran %d times, want 1: the new pool's worker started t0 over", n)
	}
	if !strings.Contains(b.output(), "resuming the task from its journal") {
		t.Errorf("worker wb did not resume t0 from its journal:\n%s", b.output())
	}
}
