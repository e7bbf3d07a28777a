package natsboard

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/fsdrun/fsd/journal"
)

// TestRemoteTranscriptInRecord: a remote task's transcript reaches the
// coordinator's journal.jsonl both ways: inline in the outcome when it is
// small, read from the journal stream when it is over a quarter of the
// server's max_payload (here 64 KiB: a 20 KiB answer).
func TestRemoteTranscriptInRecord(t *testing.T) {
	t.Parallel()
	s := runServerWith(t, server.Options{MaxPayload: 64 << 10})
	long := strings.Repeat("long answer ", 20<<10/12)
	wf := fanout(t, 2, "")
	dir := filepath.Dir(wf)
	script := filepath.Join(dir, "fan.script.yaml")
	must(t, os.WriteFile(script, []byte(`agents:
  worker: [{say: 'done {{.Task.ID}}'}]
  joiner: [{say: '`+long+`'}]
`), 0o644))
	worker(t, s.ClientURL(), "w1")
	runs := filepath.Join(dir, "runs")
	start(t, dir, nil, "run", wf, "--nats", s.ClientURL(), "--runs-dir", runs).wait(t)
	rec := onlyRun(t, runs)
	got := transcripts(t, rec)
	if msgs := got["t0"]; len(msgs) != 2 || msgs[1] != "done t0" {
		t.Errorf("t0's transcript in the record: %q", got["t0"])
	}
	if msgs := got["join"]; len(msgs) != 2 || msgs[1] != long {
		t.Errorf("join's transcript in the record: %d messages", len(msgs))
	}
	for task, inline := range map[string]bool{"t0": true, "join": false} {
		out, _ := outcome(t, s.ClientURL(), runID(rec), task, 1)
		if out.Logged != 2 || (out.Log != nil) != inline {
			t.Errorf("outcome of %s: %d entries journaled, %d inline; want 2, inline %v", task, out.Logged, len(out.Log), inline)
		}
	}
}

// nopLog is a journal that stores nothing.
type nopLog struct{ n journal.Mark }

func (l *nopLog) Append(journal.Gen, []byte) (journal.Mark, error) { l.n++; return l.n, nil }
func (l *nopLog) Wait(journal.Mark) error                          { return nil }

// TestTeeKeepsOnlyWhatGoesInline: the transcript an outcome carries is
// kept while it may still go inline; once it is over its share of
// max_payload the worker keeps none of it (it is read from the journal
// stream), not the task's whole transcript a second time.
func TestTeeKeepsOnlyWhatGoesInline(t *testing.T) {
	t.Parallel()
	resumed := []json.RawMessage{json.RawMessage(`{"seq":0}`)}
	tee := newTeeLog(&nopLog{}, resumed, 4*100) // 100 bytes inline
	entry := func(i int) []byte { return fmt.Appendf(nil, `{"seq":%d,"text":"%s"}`+"\n", i, strings.Repeat("x", 20)) }
	for i := 1; i <= 2; i++ {
		must(t, func() error { _, err := tee.Append(journal.Gen{}, entry(i)); return err }())
	}
	if got := tee.inline(); len(got) != 3 || string(got[0]) != `{"seq":0}` || string(got[2]) != strings.TrimSpace(string(entry(2))) {
		t.Fatalf("inline under the bound: %q", got)
	}
	for i := 3; i <= 10; i++ {
		must(t, func() error { _, err := tee.Append(journal.Gen{}, entry(i)); return err }())
	}
	if got := tee.inline(); got != nil {
		t.Errorf("inline over the bound: %d entries", len(got))
	}
	if len(tee.entries) != 0 {
		t.Errorf("over the bound, the tee still keeps %d entries", len(tee.entries))
	}
}
