package transcript

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/internal/golden"
	"github.com/fsdrun/fsd/model"
)

func fixedClock() func() time.Time {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	n := 0
	return func() time.Time { n++; return t0.Add(time.Duration(n) * time.Second) }
}

// sample appends a short run: a read, a tool call, an eviction.
func sample(t *testing.T, tr *Transcript) {
	t.Helper()
	steps := []func() error{
		func() error { return tr.AppendMessage(msg(model.User, "Prepare the report.")) },
		func() error { return tr.AppendMessage(msg(model.Assistant, "", "c1")) },
		func() error {
			return tr.AppendMessage(model.Message{Role: model.Tool, CallID: "c1", Name: "read_skill", Text: `{"id":"weekly-report","loaded":true}`})
		},
		func() error {
			return tr.AppendContext(ContextChange{Loaded: []string{"weekly-report"}, Skill: "weekly-report", Version: "1.2.0", Reason: ReasonRead})
		},
		func() error {
			return tr.AppendContext(ContextChange{Unloaded: []string{"brand"}, Skill: "brand", Version: "0.1.0", Reason: ReasonEvicted})
		},
		func() error { return tr.AppendMessage(msg(model.Assistant, "Done.")) },
	}
	for i, s := range steps {
		if err := s(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
}

func TestRecordGolden(t *testing.T) {
	var buf bytes.Buffer
	tr := New(&buf, WithClock(fixedClock()))
	sample(t, tr)
	golden.Check(t, filepath.Join("testdata", "record.golden"), buf.Bytes())
}

func TestReadFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "transcript.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	tr := New(f, WithClock(fixedClock()))
	sample(t, tr)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tr.Entries(), got); diff != "" {
		t.Errorf("entries read back (-want +got):\n%s", diff)
	}
	if tr.Len() != 4 || len(tr.Messages()) != 4 || len(tr.Entries()) != 6 {
		t.Errorf("Len %d, Messages %d, Entries %d; want 4, 4, 6", tr.Len(), len(tr.Messages()), len(tr.Entries()))
	}

	// A crash in the middle of a write leaves a torn last line: the
	// entries before it still load.
	data, _ := os.ReadFile(path)
	torn := filepath.Join(t.TempDir(), "torn.jsonl")
	os.WriteFile(torn, data[:len(data)-10], 0o644)
	got, err = ReadFile(torn)
	if !errors.Is(err, ErrTornTail) {
		t.Errorf("torn file: err = %v, want ErrTornTail", err)
	}
	if len(got) != 5 {
		t.Errorf("torn file: %d entries, want 5", len(got))
	}
}

func TestMalformedRefused(t *testing.T) {
	tests := []struct {
		name string
		msgs []model.Message
	}{
		{"result without call", []model.Message{msg(model.User, "u"), msg(model.Tool, "", "x")}},
		{"result out of order", []model.Message{msg(model.User, "u"), msg(model.Assistant, "", "x", "y"), msg(model.Tool, "", "y")}},
		{"extra result", []model.Message{msg(model.User, "u"), msg(model.Assistant, "", "x"), msg(model.Tool, "", "x"), msg(model.Tool, "", "x")}},
		{"user while calls open", []model.Message{msg(model.User, "u"), msg(model.Assistant, "", "x"), msg(model.User, "u2")}},
		{"assistant while calls open", []model.Message{msg(model.User, "u"), msg(model.Assistant, "", "x"), msg(model.Assistant, "a")}},
		{"unknown role", []model.Message{{Role: "system", Text: "s"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tr := New(&buf)
			var err error
			for _, m := range tt.msgs {
				if err = tr.AppendMessage(m); err != nil {
					break
				}
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
			if tr.Len() != len(tt.msgs)-1 {
				t.Errorf("refused message was recorded: Len = %d", tr.Len())
			}
			if n := bytes.Count(buf.Bytes(), []byte("\n")); n != len(tt.msgs)-1 {
				t.Errorf("record has %d lines, want %d", n, len(tt.msgs)-1)
			}
		})
	}
	if err := New(nil).AppendContext(ContextChange{Loaded: []string{"x"}}); !errors.Is(err, ErrMalformed) {
		t.Errorf("context change without reason: err = %v, want ErrMalformed", err)
	}
}

func TestInFlight(t *testing.T) {
	tr := New(nil)
	tr.AppendMessage(msg(model.User, "u"))
	tr.AppendMessage(msg(model.Assistant, "", "x", "y"))
	tr.AppendMessage(msg(model.Tool, "", "x"))
	got := tr.InFlight()
	if len(got) != 1 || got[0].ID != "y" {
		t.Fatalf("InFlight = %v, want [y]", got)
	}
	tr.AppendMessage(model.Message{Role: model.Tool, CallID: "y", Text: "cancelled", IsError: true})
	if got := tr.InFlight(); got != nil {
		t.Errorf("InFlight after answering = %v, want nil", got)
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	w.n++
	if w.n > 1 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

func TestWriteFailureKeepsMemory(t *testing.T) {
	w := &failWriter{}
	tr := New(w)
	if err := tr.AppendMessage(msg(model.User, "u")); err != nil {
		t.Fatal(err)
	}
	err := tr.AppendMessage(msg(model.Assistant, "a"))
	if !errors.Is(err, ErrRecord) {
		t.Fatalf("err = %v, want ErrRecord", err)
	}
	if err := tr.AppendMessage(msg(model.User, "u2")); !errors.Is(err, ErrRecord) {
		t.Errorf("after a failed write: err = %v, want the sticky ErrRecord", err)
	}
	if w.n != 2 {
		t.Errorf("%d writes attempted, want 2 (none after the failure)", w.n)
	}
	if tr.Len() != 3 {
		t.Errorf("Len = %d, want 3: memory keeps what the record lost", tr.Len())
	}
}

func TestConcurrentUse(t *testing.T) {
	var buf bytes.Buffer
	tr := New(&buf)
	tr.AppendMessage(msg(model.User, "u"))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				if g == 0 {
					tr.AppendMessage(msg(model.Assistant, "a"))
					if i%10 == 0 {
						tr.AppendMessage(msg(model.User, "u"))
					}
					continue
				}
				if g == 1 {
					tr.AppendContext(ContextChange{Reason: ReasonRead})
				}
				// The window and a later Messages() are different
				// snapshots, so only what holds for any snapshot is
				// checked here; the final state is checked in full below.
				if w := tr.Window(7); len(w) > 7 || len(w) > 0 && w[0].Role != model.User {
					t.Errorf("window of %d starting at %s", len(w), w[0].Role)
				}
				_ = tr.Entries()
			}
		}()
	}
	wg.Wait()
	if w := tr.Window(7); len(w) == 0 {
		t.Error("empty window")
	} else if err := checkShape(w, 7); err != nil {
		t.Error(err)
	}
}
