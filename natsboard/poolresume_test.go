package natsboard

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResumeAfterPoolQueueExpired: the only worker of a pool dies mid-task
// and its pool's queue is removed (by hand, `nats consumer rm`) before
// another starts, which creates it again. The new worker's queue
// delivers the message as a first delivery, yet it resumes the task from
// its journal: the journaled command does not run again.
func TestResumeAfterPoolQueueExpired(t *testing.T) {
	srv := runServer(t)
	wf, skills, marks := markWorkflow(t, "6s")
	dir := filepath.Dir(wf)
	a := worker(t, srv.ClientURL(), "wa", "--concurrency", "1", "--trust", skills)
	runs := filepath.Join(dir, "runs")
	run := start(t, dir, nil, "run", wf, "--nats", srv.ClientURL(), "--runs-dir", runs)
	r := testJS(t, srv.ClientURL())
	until(t, "t0's command result to be journaled", func() bool {
		ents, _ := os.ReadDir(runs)
		if len(ents) != 1 {
			return false
		}
		got, err := ReadJournal(context.Background(), r.js, ents[0].Name(), "t0", 1)
		return err == nil && len(got) >= 3
	})
	a.kill()
	must(t, r.js.DeleteConsumer(context.Background(), TaskStream, consumerName(">")))
	b := worker(t, srv.ClientURL(), "wb", "--concurrency", "1", "--trust", skills)
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
