package natsboard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/work"
)

// journalMsgs is how many messages the journal stream holds.
func journalMsgs(t *testing.T, r *resources) uint64 {
	t.Helper()
	info, err := r.journal.Info(context.Background())
	must(t, err)
	return info.State.Msgs
}

// TestJournalEntriesShareMessages: the entries appended before a Wait go
// out as one message (two when they would not fit one), and the reader
// splits them again, fencing stale writers as it does entry by entry. An
// entry nobody waits for is published after the linger all the same.
func TestJournalEntriesShareMessages(t *testing.T) {
	t.Parallel()
	srv := runServerWith(t, server.Options{MaxPayload: 8 << 10})
	r := testJS(t, srv.ClientURL())
	ctx := context.Background()
	a := NewAttemptLog(r.jsj, "run-1", "t0", 1, 1, 0)
	a.linger = time.Hour
	appendEntries(t, a, 0, 3, "a")
	if n := journalMsgs(t, r); n != 1 {
		t.Fatalf("three entries and a wait: %d messages, want 1", n)
	}
	v, err := readJournal(ctx, r.journal, "run-1", "t0", 1)
	if err != nil || tags(v.entries) != "a0 a1 a2" {
		t.Fatalf("view %q: %v", tags(v.entries), err)
	}
	// A second delivery resumes after the view; the first, its lease
	// lost, goes on writing.
	b := NewAttemptLog(r.jsj, "run-1", "t0", 1, 2, v.last())
	b.linger = time.Hour
	appendEntries(t, a, 3, 5, "stale")
	appendEntries(t, b, 3, 5, "b")
	appendEntries(t, a, 5, 6, "stale")
	appendEntries(t, b, 5, 6, "b")
	if got, err := journalOf(ctx, r, "run-1", "t0", 1); err != nil || tags(got) != "a0 a1 a2 b3 b4 b5" {
		t.Errorf("view %q (%v), want a0 a1 a2 b3 b4 b5", tags(got), err)
	}

	// Entries that do not fit one message go in two.
	c := NewAttemptLog(r.jsj, "run-1", "t1", 1, 1, 0)
	c.linger = time.Hour
	before := journalMsgs(t, r)
	var m uint64
	for i := range 3 {
		mk, err := c.Append(c.gen, fmt.Appendf(nil, `{"seq":%d,"tag":"c%d","text":"%s"}`, i, i, strings.Repeat("x", 3<<10)))
		must(t, err)
		m = uint64(mk)
	}
	must(t, c.Wait(c.Last()))
	if n := journalMsgs(t, r) - before; n != 2 || m != 3 {
		t.Errorf("three 3 KB entries under an 8 KB max_payload: %d messages, want 2", n)
	}
	if got, err := journalOf(ctx, r, "run-1", "t1", 1); err != nil || tags(got) != "c0 c1 c2" {
		t.Errorf("view %q (%v), want c0 c1 c2", tags(got), err)
	}

	// Nobody waits: published after the linger.
	d := NewAttemptLog(r.jsj, "run-1", "t2", 1, 1, 0)
	_, err = d.Append(d.gen, []byte(`{"seq":0,"tag":"d0"}`))
	must(t, err)
	until(t, "the entry nobody waited for to be stored", func() bool {
		got, err := journalOf(ctx, r, "run-1", "t2", 1)
		return err == nil && tags(got) == "d0"
	})
}

// TestEventBatch: a worker's events wait for the linger and go out
// together; those still kept when the attempt ends are the outcome's
// (none sent), and an event emitted after that is sent at once.
func TestEventBatch(t *testing.T) {
	t.Parallel()
	srv := runServer(t)
	nc, err := nats.Connect(srv.ClientURL())
	must(t, err)
	defer nc.Close()
	subject := eventsSubject("run1", "t1", 1)
	got := make(chan *nats.Msg, 16)
	sub, err := nc.ChanSubscribe(subject, got)
	must(t, err)
	defer func() { _ = sub.Unsubscribe() }()
	must(t, nc.Flush())
	ev := func(text string) event.Event { return event.Event{Type: event.Text, Text: text} }

	b := newEventBatch(nc, subject)
	b.linger = time.Hour
	b.Emit(ev("a"))
	b.Emit(ev("b"))
	tail := b.tail()
	b.Emit(ev("late"))
	must(t, nc.Publish(subject, []byte("marker")))
	var msgs []string
	for m := range got {
		if string(m.Data) == "marker" {
			break
		}
		msgs = append(msgs, string(m.Data))
	}
	if len(tail) != 2 || len(msgs) != 1 || !strings.Contains(msgs[0], `"late"`) {
		t.Errorf("tail %q, sent %q; want the two kept events in the tail and the late one sent", tail, msgs)
	}

	b = newEventBatch(nc, subject)
	b.Emit(ev("x"))
	b.Emit(ev("y"))
	select {
	case m := <-got:
		if evs := splitEvents(m.Data); len(evs) != 2 {
			t.Errorf("one batch after the linger: %q, want both events", m.Data)
		}
	case <-time.After(time.Minute):
		t.Fatal("kept events were not sent after the linger")
	}
}

// TestFinalStepWithOutcome: a worker's final answer is durable with its
// outcome. With nothing published but what a wait asks for, short tasks
// leave no journal message and their transcripts and events reach the
// record through their outcomes; a transcript too large for its outcome
// is stored in the journal before the outcome is committed, and the
// record holds it whole.
func TestFinalStepWithOutcome(t *testing.T) {
	t.Parallel()
	s := runServerWith(t, server.Options{MaxPayload: 64 << 10})
	long := strings.Repeat("long answer ", 20<<10/12)
	wf := fanout(t, 2, "")
	must(t, os.WriteFile(filepath.Join(filepath.Dir(wf), "fan.script.yaml"), []byte(`agents:
  worker: [{say: 'done {{.Task.ID}}'}]
  joiner: [{say: '`+long+`'}]
`), 0o644))
	serveWith(t, s.ClientURL(), WorkerOptions{Work: engine.Work, Name: "w1", AckWait: 5 * time.Second},
		func(w *Worker) { w.linger = time.Hour })
	c := coordinator(t, s.ClientURL(), wf)
	res, err := runWorkflowIn(t, wf, c, t.TempDir())
	must(t, err)
	got := transcripts(t, res.Dir)
	for _, task := range []string{"t0", "t1"} {
		if msgs := got[task]; len(msgs) != 2 || msgs[1] != "done "+task {
			t.Errorf("%s's transcript in the record: %q", task, msgs)
		}
		if v, err := readJournal(context.Background(), c.res.journal, runID(res.Dir), task, 1); err != nil || len(v.entries) != 0 {
			t.Errorf("%s's journal holds %d entries (%v); want none: its outcome carried its one step", task, len(v.entries), err)
		}
	}
	if msgs := got["join"]; len(msgs) != 2 || msgs[1] != long {
		t.Errorf("join's transcript in the record: %d messages", len(msgs))
	}
	if out, _ := outcome(t, s.ClientURL(), runID(res.Dir), "join", 1); out.Log != nil || out.Logged != 2 {
		t.Errorf("join's outcome: %d entries, %d inline; want 2 read from the journal", out.Logged, len(out.Log))
	}
	texts := map[string]int{}
	for _, e := range events(t, res.Dir) {
		if e["type"] == string(event.Text) {
			texts[fmt.Sprint(e["task"])]++
		}
	}
	if texts["t0"] != 1 || texts["t1"] != 1 {
		t.Errorf("the workers' text events in the record: %v; want one for t0 and t1, from their outcomes", texts)
	}
}

// TestFailedCommitStoresFinalStep: a worker whose commit fails stores
// the entries the outcome would have carried before it hands the message
// back, so the next delivery resumes after the final answer instead of
// asking the model again.
func TestFailedCommitStoresFinalStep(t *testing.T) {
	t.Parallel()
	all := &server.SubjectPermission{Allow: []string{">"}}
	noCommit := &server.SubjectPermission{Allow: []string{">"}, Deny: []string{"$KV." + ResultsBucket + ".>"}}
	srv := runServerWith(t, server.Options{Users: []*server.User{
		{Username: "coord", Password: "c", Permissions: &server.Permissions{Publish: all, Subscribe: all}},
		{Username: "stuck", Password: "s", Permissions: &server.Permissions{Publish: noCommit, Subscribe: all}},
		{Username: "worker", Password: "w", Permissions: &server.Permissions{Publish: all, Subscribe: all}},
	}})
	url := func(user string) string { return strings.Replace(srv.ClientURL(), "nats://", "nats://"+user+"@", 1) }
	wf := fanout(t, 1, "")
	c := coordinator(t, url("coord:c"), wf)
	var asked atomic.Int32
	m := model.Func(func(context.Context, *model.Request) (*model.Response, error) {
		asked.Add(1)
		return &model.Response{Text: "answered"}, nil
	})
	// An ack wait well beyond the failing commit's (5 s): the message
	// comes back by the hand-back, not because the ack wait ran out while
	// the commit waited.
	start := func(user, name string) func() {
		return serveWith(t, url(user), WorkerOptions{Work: engine.Work, Name: name, AckWait: time.Minute,
			Model: func(string, string) (model.Model, error) { return m, nil }}, func(w *Worker) { w.linger = time.Hour })
	}
	stopStuck := start("stuck:s", "stuck")
	done := make(chan *work.Outcome, 1)
	go func() {
		out, err := c.Dispatch(context.Background(), &work.Attempt{Run: "r-final", Task: "t0", Number: 1, Goal: "task 0",
			Skill: "fan", Agent: "worker", Assignee: "fan/worker", Limits: work.Limits{MaxSteps: 2, MaxTranscriptMessages: 100}}, nil, nil)
		if err != nil {
			out = &work.Outcome{Error: err.Error()}
		}
		done <- out
	}()
	until(t, "the stuck worker's final step in the journal", func() bool {
		v, err := readJournal(context.Background(), c.res.journal, "r-final", "t0", 1)
		return err == nil && len(v.entries) >= 2
	})
	stopStuck()
	start("worker:w", "w1")
	var out *work.Outcome
	select {
	case out = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("no outcome")
	}
	if out.Error != "" || out.Result != "answered" || out.Worker != "w1" {
		t.Errorf("outcome %+v; want w1's answer", out)
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("the model was asked %d times; want once: the next delivery resumes after the final answer", n)
	}
}
