package natsboard

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/journal"
)

// ent is a stored entry for journalView: stream seq, delivery, base (-1:
// none) and the transcript seq plus a tag in its body.
func ent(seq, delivery uint64, base int, tseq int, tag string) journalEntry {
	e := journalEntry{seq: seq, delivery: delivery, data: json.RawMessage(fmt.Sprintf(`{"seq":%d,"tag":%q}`, tseq, tag))}
	if base >= 0 {
		e.based, e.base = true, uint64(base)
	}
	return e
}

func tags(entries []json.RawMessage) string {
	var out []string
	for _, e := range entries {
		var v struct{ Tag string }
		_ = json.Unmarshal(e, &v)
		out = append(out, v.Tag)
	}
	return strings.Join(out, " ")
}

// TestJournalViewFencing: the reader's rule over interleaved deliveries.
// A stale writer (a worker that lost its lease and keeps appending) never
// changes the view of the delivery that took over.
func TestJournalViewFencing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   []journalEntry
		want string
	}{
		{"one delivery", []journalEntry{ent(1, 1, 0, 0, "a0"), ent(2, 1, -1, 1, "a1"), ent(3, 1, -1, 2, "a2")}, "a0 a1 a2"},
		{"resumed after the whole view", []journalEntry{
			ent(1, 1, 0, 0, "a0"), ent(2, 1, -1, 1, "a1"),
			ent(3, 2, 2, 2, "b2"), ent(4, 2, -1, 3, "b3")}, "a0 a1 b2 b3"},
		{"stale writer before and after the newer delivery's first entry", []journalEntry{
			ent(1, 1, 0, 0, "a0"), ent(2, 1, -1, 1, "a1"),
			// delivery 2 read up to 2; delivery 1 goes on writing
			ent(3, 1, -1, 2, "a2-stale"),
			ent(4, 2, 2, 2, "b2"),
			ent(5, 1, -1, 3, "a3-stale"),
			ent(6, 2, -1, 3, "b3"),
			ent(7, 1, -1, 4, "a4-stale")}, "a0 a1 b2 b3"},
		{"third delivery fences the second", []journalEntry{
			ent(1, 1, 0, 0, "a0"),
			ent(2, 2, 1, 1, "b1"), ent(3, 2, -1, 2, "b2"),
			ent(4, 3, 2, 2, "c2"), // read up to b1 only
			ent(5, 2, -1, 3, "b3-stale"), ent(6, 3, -1, 3, "c3")}, "a0 b1 c2 c3"},
		{"stale delivery's late first entry", []journalEntry{
			ent(1, 3, 0, 0, "c0"),
			ent(2, 2, 0, 0, "b0-stale"), ent(3, 3, -1, 1, "c1")}, "c0 c1"},
		{"empty view, then fenced from nothing", []journalEntry{
			ent(1, 1, 0, 0, "a0"), ent(2, 2, 0, 0, "b0"), ent(3, 1, -1, 1, "a1-stale"), ent(4, 2, -1, 1, "b1")}, "b0 b1"},
		{"newer delivery whose first entry was lost", []journalEntry{
			ent(1, 1, 0, 0, "a0"), ent(2, 2, -1, 2, "b2-orphan")}, "a0"},
		{"a lost entry ends its delivery's view", []journalEntry{
			ent(1, 1, 0, 0, "a0"), ent(2, 1, -1, 2, "a2-after-gap"), ent(3, 1, -1, 3, "a3")}, "a0"},
		{"a newer delivery goes on after a gap", []journalEntry{
			ent(1, 1, 0, 0, "a0"), ent(2, 1, -1, 2, "a2-after-gap"),
			ent(3, 2, 1, 1, "b1"), ent(4, 2, -1, 2, "b2")}, "a0 b1 b2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tags(journalView(tc.in).entries); got != tc.want {
				t.Errorf("view %q, want %q", got, tc.want)
			}
		})
	}
}

// testJS connects to srv and sets the resources up.
func testJS(t *testing.T, url string) *resources {
	t.Helper()
	r, err := connect(context.Background(), url, dialing{name: "test", replicas: 1, log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// appendEntries appends transcript entries with seqs from..to-1 and
// waits for them.
func appendEntries(t *testing.T, l *AttemptLog, from, to int, tag string) {
	t.Helper()
	var m journal.Mark
	for i := from; i < to; i++ {
		var err error
		if m, err = l.Append(l.gen, fmt.Appendf(nil, `{"seq":%d,"tag":"%s%d"}`+"\n", i, tag, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Wait(m); err != nil {
		t.Fatal(err)
	}
}

// TestJournalStaleWriterOnServer: through a server, a second delivery
// reads what the first wrote, resumes after it while the first (its lease
// lost) keeps appending; readJournal returns the second's view exactly.
func TestJournalStaleWriterOnServer(t *testing.T) {
	t.Parallel()
	srv := runServer(t)
	r := testJS(t, srv.ClientURL())
	ctx := context.Background()
	if v, err := journalOf(ctx, r, "run-1", "t.0", 1); err != nil || len(v) != 0 {
		t.Fatalf("empty journal: %v %v", v, err)
	}
	a := NewAttemptLog(r.jsj, "run-1", "t.0", 1, 1, 0)
	appendEntries(t, a, 0, 2, "a")
	v, err := readJournal(ctx, r.journal, "run-1", "t.0", 1)
	if err != nil || tags(v.entries) != "a0 a1" {
		t.Fatalf("first view %q: %v", tags(v.entries), err)
	}
	b := NewAttemptLog(r.jsj, "run-1", "t.0", 1, 2, v.last())
	appendEntries(t, a, 2, 3, "stale")
	appendEntries(t, b, 2, 3, "b")
	appendEntries(t, a, 3, 5, "stale")
	appendEntries(t, b, 3, 4, "b")
	// Another attempt's journal is another subject.
	appendEntries(t, NewAttemptLog(r.jsj, "run-1", "t.0", 2, 1, 0), 0, 1, "other")
	got, err := journalOf(ctx, r, "run-1", "t.0", 1)
	if err != nil {
		t.Fatal(err)
	}
	if tags(got) != "a0 a1 b2 b3" {
		t.Errorf("view %q, want a0 a1 b2 b3", tags(got))
	}
	if _, err := a.Append(journal.Gen{Task: "t.0", Attempt: 2}, []byte(`{"seq":5}`)); err == nil {
		t.Error("an entry of another generator was taken")
	}
}

// TestAttemptLogPublishFailure: when the stream refuses (it was deleted)
// Wait fails, and so does every later Append: a step never counts as
// journaled when it is not.
func TestAttemptLogPublishFailure(t *testing.T) {
	t.Parallel()
	srv := runServer(t)
	r := testJS(t, srv.ClientURL())
	ctx := context.Background()
	l := NewAttemptLog(r.jsj, "run-1", "t0", 1, 1, 0)
	appendEntries(t, l, 0, 1, "a")
	if err := r.js.DeleteStream(ctx, JournalStream); err != nil {
		t.Fatal(err)
	}
	m, err := l.Append(l.gen, []byte(`{"seq":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Wait(m); err == nil {
		t.Fatal("Wait succeeded for an entry no stream stored")
	}
	if _, err := l.Append(l.gen, []byte(`{"seq":2}`)); err == nil {
		t.Error("Append after a failed publish succeeded")
	}
	// A stream that does not take the subject refuses too (the expected
	// stream header).
	if _, err := r.js.CreateStream(ctx, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{journalSubjects + ".>"}}); err != nil {
		t.Fatal(err)
	}
	l2 := NewAttemptLog(r.jsj, "run-1", "t0", 1, 2, 0)
	m, err = l2.Append(l2.gen, []byte(`{"seq":0}`))
	if err == nil {
		err = l2.Wait(m)
	}
	if err == nil {
		t.Error("an entry stored in another stream counted as journaled")
	}
	// An entry the server cannot take in one message fails at once.
	l3 := NewAttemptLog(r.jsj, "run-1", "t1", 1, 1, 0)
	big := `{"seq":0,"text":"` + strings.Repeat("x", int(r.nc.MaxPayload())) + `"}`
	if _, err := l3.Append(l3.gen, []byte(big)); err == nil || !strings.Contains(err.Error(), "max_payload") {
		t.Errorf("oversized entry: %v", err)
	}
}

// A journal error that may pass hands the task back (the next delivery
// resumes from what was stored); one that will not fails the task.
func TestJournalTransient(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("journal of k: entry 3: %w", jetstream.ErrNoStreamResponse), true},
		{fmt.Errorf("journal of k: %w", jetstream.ErrAsyncPublishTimeout), true},
		{fmt.Errorf("journal of k: %w", jetstream.ErrTooManyStalledMsgs), true},
		{fmt.Errorf("journal of k: %w", nats.ErrConnectionClosed), true},
		{fmt.Errorf("journal of k: %w", nats.ErrMaxPayload), false},
		{fmt.Errorf("journal of k: %w", jetstream.ErrStreamNotFound), false},
	} {
		if got := journalTransient(tc.err); got != tc.want {
			t.Errorf("journalTransient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// journalOf reads an attempt's journal as a redelivery does.
func journalOf(ctx context.Context, r *resources, run, task string, attempt int) ([]json.RawMessage, error) {
	v, err := readJournal(ctx, r.journal, run, task, attempt)
	if err != nil {
		return nil, err
	}
	return v.entries, nil
}
