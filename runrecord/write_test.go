package runrecord_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/transcript"
)

// What a Writer writes, Open reads back: run.json with its status and
// pending calls, board.json, a generator's journal and the request it
// sent, rebuilt as sent. While the Writer is open the folder is locked.
func TestWriterRoundTrip(t *testing.T) {
	runs := t.TempDir()
	p := &spec.Project{Workflow: &spec.Workflow{Name: "w"}}
	w, err := runrecord.Create(runs, "r1", p, runrecord.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runrecord.Create(runs, "r1", p, runrecord.WriteOptions{}); !errors.Is(err, journal.ErrLocked) {
		t.Errorf("a second writer of an open record: %v, want journal.ErrLocked", err)
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	sum := runrecord.Summary{ID: "r1", Status: runrecord.Waiting, Started: now, Input: "go",
		Pending: []runrecord.PendingCall{{Call: "host/s1/c1", Tool: "effect", Args: json.RawMessage(`{"n":1}`), Since: now}}}
	if err := w.WriteSummary(sum); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteBoard([]board.Task{{ID: "t1", Goal: "do", Status: board.Completed, Result: "done"}}); err != nil {
		t.Fatal(err)
	}
	tr := transcript.New(genWriter{w.Journal(), journal.Gen{}})
	if err := tr.AppendMessage(model.Message{Role: model.User, Text: "go"}); err != nil {
		t.Fatal(err)
	}
	req := &model.Request{Context: "ctx", Messages: []model.Message{{Role: model.User, Text: "go"}},
		Tools: []model.ToolDef{{Name: "effect", Description: "does", Parameters: []byte(`{"type":"object"}`)}}}
	w.Request(runrecord.GenName(journal.Gen{}), runrecord.Sent{Request: req, Window: []transcript.Span{{From: 0, To: 1}}}, 1, now)
	if err := tr.AppendMessage(model.Message{Role: model.Assistant, Text: "done"}); err != nil {
		t.Fatal(err)
	}
	w.Response(runrecord.GenName(journal.Gen{}), req.Caller, model.Usage{InputTokens: 10, OutputTokens: 2}, 0, nil, nil, now)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Err(); err != nil {
		t.Fatal(err)
	}

	rec, err := runrecord.Open(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	// run.json is indented: arguments are compared as JSON values.
	compact := cmp.Transformer("compact", func(r json.RawMessage) string {
		var b bytes.Buffer
		if err := json.Compact(&b, r); err != nil {
			return string(r)
		}
		return b.String()
	})
	written, err := runrecord.ReadSummary(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sum, written, compact); diff != "" {
		t.Errorf("run.json (-written +read):\n%s", diff)
	}
	if !written.Status.Live() {
		t.Error("a waiting run read back is not live")
	}
	// A reader shows it as it is: the writer closed without ending the
	// run, and nobody holds the folder.
	if rec.Summary.Status != runrecord.Interrupted {
		t.Errorf("Open: status %s, want interrupted (nobody holds the folder)", rec.Summary.Status)
	}
	if len(rec.Tasks) != 1 || rec.Tasks[0].Result != "done" {
		t.Errorf("board.json: %+v", rec.Tasks)
	}
	if len(rec.Gens) != 1 || len(rec.Gens[0].Steps) != 1 {
		t.Fatalf("generators: %+v", rec.Gens)
	}
	st := rec.Gens[0].Steps[0]
	got := model.Request{Context: st.Request.Context, Messages: st.Request.Messages, Tools: st.Request.Tools}
	want := model.Request{Context: req.Context, Messages: req.Messages, Tools: req.Tools}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the request read back (-sent +read):\n%s", diff)
	}
	if st.Usage == nil || st.Usage.InputTokens != 10 || len(st.Response) != 1 || st.Response[0].Text != "done" {
		t.Errorf("step: usage %+v, response %+v", st.Usage, st.Response)
	}
	// Closed: the folder is free again (a resume takes it).
	w2, err := runrecord.Create(runs, "r1", p, runrecord.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
}

// genWriter writes a transcript's entries to one generator's part of a
// journal.
type genWriter struct {
	log journal.Log
	gen journal.Gen
}

func (g genWriter) Write(b []byte) (int, error) {
	if _, err := g.log.Append(g.gen, b); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Events and requests go out with the journal: once a journal line
// appended after them is durable, both are in their files, though no
// lazy flush came (a crash then loses no event the journal goes past).
func TestRecordStreamsGoOutWithEachCommit(t *testing.T) {
	p := &spec.Project{Workflow: &spec.Workflow{Name: "w"}}
	w, err := runrecord.Create(t.TempDir(), "r1", p, runrecord.WriteOptions{FlushDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	w.Sink().Emit(event.Event{Type: event.RunStarted, Time: now, Run: "r1"})
	req := &model.Request{Context: "ctx", Messages: []model.Message{{Role: model.User, Text: "go"}}}
	w.Request(runrecord.GenName(journal.Host), runrecord.Sent{Request: req}, 1, now)
	m, err := w.Journal().Append(journal.Host, []byte(`{"seq":0}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Journal().Wait(m); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{runrecord.EventsFile: `"run.started"`, runrecord.RequestsFile: `"kind":"request"`} {
		b, err := os.ReadFile(filepath.Join(w.Dir(), name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("%s holds %q once the journal line after it is synced, want %s", name, b, want)
		}
	}
}

// B6: a request that holds a reservation is in its file when Request
// returns, with what it held, though no commit or lazy flush came; one
// that holds none waits in the buffer as before.
func TestHeldRequestIsOnFile(t *testing.T) {
	p := &spec.Project{Workflow: &spec.Workflow{Name: "w"}}
	w, err := runrecord.Create(t.TempDir(), "r1", p, runrecord.WriteOptions{FlushDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	req := &model.Request{Context: "ctx", Messages: []model.Message{{Role: model.User, Text: "go"}}}
	path := filepath.Join(w.Dir(), runrecord.RequestsFile)
	w.Request(runrecord.GenName(journal.Host), runrecord.Sent{Request: req}, 1, now)
	if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(`"kind":"request"`)) {
		t.Fatalf("a request without a reservation was written at once: the test cannot tell a flush from the buffer")
	}
	held := &model.Usage{InputTokens: 420, OutputTokens: 64}
	w.Request(runrecord.GenName(journal.Host), runrecord.Sent{Request: req, Held: held}, 1, now)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"held":{"input_tokens":420,"output_tokens":64}`)) {
		t.Errorf("after Request the file holds %q, want the line with what it held", b)
	}
	var lines []runrecord.Line
	if err := runrecord.Responses(w.Dir(), func(l runrecord.Line) { lines = append(lines, l) }); err != nil {
		t.Fatal(err)
	}
	if len(lines) != 1 || lines[0].Kind != runrecord.KindRequest || *lines[0].Held != *held {
		t.Errorf("Responses read %+v, want the one request that held a reservation", lines)
	}
}

// A tool redefined under its name (another agent's, an edited skill's)
// is its own blob: each request reads back with the definition it was
// sent, though the writer remembers definitions by name.
func TestToolRedefinedUnderItsName(t *testing.T) {
	p := &spec.Project{Workflow: &spec.Workflow{Name: "w"}}
	w, err := runrecord.Create(t.TempDir(), "r1", p, runrecord.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	if err := w.WriteSummary(runrecord.Summary{ID: "r1", Status: runrecord.Finished, Started: now}); err != nil {
		t.Fatal(err)
	}
	tr := transcript.New(genWriter{w.Journal(), journal.Gen{}})
	params := []byte(`{"type":"object"}`)
	defs := []model.ToolDef{
		{Name: "find", Description: "Finds a file.", Parameters: params},
		{Name: "find", Description: "Finds a line.", Parameters: params},
		{Name: "find", Description: "Finds a line.", Parameters: []byte(`{"type":"object","required":["q"]}`)},
		{Name: "find", Description: "Finds a file.", Parameters: params},
	}
	gen := runrecord.GenName(journal.Gen{})
	for i, d := range defs {
		if err := tr.AppendMessage(model.Message{Role: model.User, Text: fmt.Sprint("go ", i)}); err != nil {
			t.Fatal(err)
		}
		req := &model.Request{Context: "ctx", Tools: []model.ToolDef{d}, Caller: model.Caller{Step: i}}
		w.Request(gen, runrecord.Sent{Request: req, Window: []transcript.Span{{From: 2 * i, To: 2*i + 1}}}, 2*i+1, now)
		if err := tr.AppendMessage(model.Message{Role: model.Assistant, Text: "ok"}); err != nil {
			t.Fatal(err)
		}
		w.Response(gen, req.Caller, model.Usage{InputTokens: 1}, 0, nil, nil, now)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := runrecord.Open(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Gens) != 1 || len(rec.Gens[0].Steps) != len(defs) {
		t.Fatalf("generators: %+v", rec.Gens)
	}
	for i, st := range rec.Gens[0].Steps {
		if diff := cmp.Diff(defs[i:i+1], st.Request.Tools); diff != "" {
			t.Errorf("step %d's tools (-sent +read):\n%s", i, diff)
		}
	}
}

// BenchmarkRequestLine is one model call's request line: buffered, as
// without a budget, or written through to the file because the call
// holds a reservation (B6) — what a budget adds to a call's record.
func BenchmarkRequestLine(b *testing.B) {
	for _, tc := range []struct {
		name string
		held *model.Usage
	}{{"buffered", nil}, {"held", &model.Usage{InputTokens: 1200, OutputTokens: 8192}}} {
		b.Run(tc.name, func(b *testing.B) {
			p := &spec.Project{Workflow: &spec.Workflow{Name: "w"}}
			w, err := runrecord.Create(b.TempDir(), "r1", p, runrecord.WriteOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			req := &model.Request{Context: "ctx", Messages: []model.Message{{Role: model.User, Text: "go"}}}
			s := runrecord.Sent{Request: req, Held: tc.held}
			now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
			b.ReportAllocs()
			for b.Loop() {
				w.Request("tasks/t1.jsonl", s, 1, now)
			}
		})
	}
}

// A record Create cannot set up (here journal.jsonl is a folder; a full
// disk fails the same way) is an error, and its lock is released, not a
// nil-pointer panic: Create's cleanup read the named result, which the
// error return had set to nil.
func TestCreateFailsCleanly(t *testing.T) {
	runs := t.TempDir()
	if err := os.MkdirAll(filepath.Join(runs, "r1", runrecord.JournalFile), 0o755); err != nil {
		t.Fatal(err)
	}
	p := &spec.Project{Workflow: &spec.Workflow{Name: "w"}}
	for range 2 {
		_, err := runrecord.Create(runs, "r1", p, runrecord.WriteOptions{})
		if err == nil || errors.Is(err, journal.ErrLocked) {
			t.Fatalf("Create over a journal that is a folder: %v, want the error opening it", err)
		}
	}
}
