package natsboard

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/fsdrun/fsd/work"
)

// TestTaskOverMaxPayload: a task message larger than the server accepts
// fails its dispatch with an error that says which setting to raise (and
// not the task, which the board names: "task big failed: …").
func TestTaskOverMaxPayload(t *testing.T) {
	t.Parallel()
	s := runServerWith(t, server.Options{MaxPayload: 8 << 10})
	ctx := context.Background()
	c, err := Connect(ctx, s.ClientURL(), Options{})
	must(t, err)
	defer c.Close()
	_, err = c.Dispatch(ctx, &work.Attempt{Run: "r1", Task: "big", Number: 1, Goal: "g", Input: strings.Repeat("x", 16<<10)}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "over the NATS server's max_payload (8192): raise max_payload") || strings.Contains(err.Error(), "big") {
		t.Errorf("dispatch of a 16 KiB task: %v", err)
	}
}

// TestOutcomeOverMaxPayload: a task whose outcome (its result and the
// items it adds to the history) is larger than the server accepts fails
// with an error that says so and which setting to raise, once, instead of
// being delivered again until the redelivery bound.
func TestOutcomeOverMaxPayload(t *testing.T) {
	t.Parallel()
	s := runServerWith(t, server.Options{MaxPayload: 24 << 10})
	wf := fanout(t, 1, "")
	dir := filepath.Dir(wf)
	// t0 calls a tool four times, 8 KiB each: every journal entry and
	// the task message fit, the outcome (its observations carry the
	// tools' results) does not.
	blob := strings.Repeat("y", 8<<10)
	must(t, os.WriteFile(filepath.Join(dir, "skills", "fan", "fan.skill.yaml"), []byte(`id: fan
name: Fan
description: Answers fan-out tasks; the joiner joins them.
version: 1.0.0
instructions: Answer the task.
tools:
  - {name: blob, description: A large reply., run: {reply: `+blob+`}}
agents:
  worker: {description: Answers one task., prompt: Answer., tools: [blob]}
  joiner: {description: Joins the results., prompt: Join., max-steps: 2}
`), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "fan.script.yaml"), []byte(`agents:
  worker: [{call: blob}, {call: blob}, {call: blob}, {call: blob}, {say: done}]
  joiner: [{say: 'joined'}]
`), 0o644))
	w := worker(t, s.ClientURL(), "w1")
	runs := filepath.Join(dir, "runs")
	run := start(t, dir, nil, "run", wf, "--nats", s.ClientURL(), "--runs-dir", runs)
	<-run.done
	if n := started(w.output())["t0"]; n != 1 {
		t.Errorf("t0 started %d times, want 1", n)
	}
	out, _ := outcome(t, s.ClientURL(), runID(onlyRun(t, runs)), "t0", 1)
	if !strings.Contains(out.Error, "over the NATS server's max_payload (24576): raise max_payload") {
		t.Errorf("t0's outcome error %q", out.Error)
	}
}
