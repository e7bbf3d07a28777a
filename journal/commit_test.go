package journal

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gate is a sync hook that holds each fdatasync until the test lets it go
// on, so a test can act while a commit is under way.
type gate struct {
	entered chan struct{} // a sync started
	release chan struct{} // one held sync goes on
	done    atomic.Int64  // syncs finished
}

func newGate() *gate {
	return &gate{entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *gate) sync(f *os.File) error {
	g.entered <- struct{}{}
	<-g.release
	err := fdatasync(f)
	g.done.Add(1)
	return err
}

// waitWritten returns once the writer has written the lines up to m to
// its file (synced or not); each round broadcasts when it ends.
func waitWritten(w *Writer, m Mark) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.written < m && w.err == nil {
		w.durable.Wait()
	}
}

// A line a lazy flush already wrote is not yet durable: a Wait for it
// still syncs, and returns only once that sync has.
func TestWriterWaitSyncsAWrittenLine(t *testing.T) {
	f, path := openJournal(t)
	g := newGate()
	w := NewWriter(f, WithFlushDelay(time.Millisecond), withSync(g.sync))
	m, _ := w.Append(Host, []byte(`{"seq":0}`))
	waitWritten(w, m)
	if b, _ := os.ReadFile(path); !bytes.Contains(b, []byte(`"seq":0`)) {
		t.Fatalf("after the lazy flush the file holds %q", b)
	}
	if st := w.Stats(); st.Commits != 0 {
		t.Fatalf("a lazy flush synced: %+v", st)
	}
	returned := make(chan int64, 1)
	go func() {
		if err := w.Wait(m); err != nil {
			t.Error(err)
		}
		returned <- g.done.Load()
	}()
	select {
	case n := <-returned:
		t.Fatalf("Wait for a written line returned after %d syncs, without one of its own", n)
	case <-g.entered:
	}
	g.release <- struct{}{}
	if n := <-returned; n != 1 {
		t.Errorf("Wait returned after %d finished syncs, want 1", n)
	}
	if st := w.Stats(); st.Commits != 1 {
		t.Errorf("commits %d, want 1 (one sync)", st.Commits)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// A sync makes durable what was written before it started: a line
// appended while it runs waits for the next sync.
func TestWriterSyncCoversOnlyWhatItWrote(t *testing.T) {
	f, path := openJournal(t)
	g := newGate()
	w := NewWriter(f, WithFlushDelay(time.Hour), withSync(g.sync))
	m1, _ := w.Append(Host, []byte(`{"seq":0}`))
	first := make(chan error, 1)
	go func() { first <- w.Wait(m1) }()
	select {
	case err := <-first:
		t.Fatalf("Wait returned (%v) before a sync of its line began", err)
	case <-g.entered: // line 1 is written and its sync is under way
	}

	m2, _ := w.Append(Host, []byte(`{"seq":1}`))
	second := make(chan int64, 1)
	go func() {
		if err := w.Wait(m2); err != nil {
			t.Error(err)
		}
		second <- g.done.Load()
	}()
	g.release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-second:
		t.Fatalf("a line appended during a sync was released by it (%d syncs finished)", n)
	case <-g.entered: // the sync of line 2
	}
	g.release <- struct{}{}
	if n := <-second; n != 2 {
		t.Errorf("the wait for line 2 returned after %d finished syncs, want 2", n)
	}
	if st := w.Stats(); st.Commits != 2 {
		t.Errorf("commits %d, want 2 (two syncs)", st.Commits)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); bytes.Count(b, []byte("\n")) != 2 {
		t.Errorf("journal %q, want 2 lines", b)
	}
}

// A commit reaches the system: fdatasync of a pipe fails on Linux, and
// the waiter gets that error, so a sync that does nothing cannot pass.
func TestWriterSyncFailure(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("fdatasync of a pipe fails on Linux only")
	}
	r, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer pw.Close()
	w := NewWriter(pw)
	m, _ := w.Append(Host, []byte(`{"seq":0}`))
	err = w.Wait(m)
	if err == nil || !strings.Contains(err.Error(), "sync") {
		t.Fatalf("Wait on a journal that cannot sync: %v, want a sync error", err)
	}
	if st := w.Stats(); st.Commits != 0 {
		t.Errorf("a failed sync counted as a commit: %+v", st)
	}
	w.Close()
}

// A stream's lines reach their file no later than the journal line
// appended after them: when a journal line is written, and when it is
// synced, the events and requests appended before it are already
// written.
func TestWriterStreamsBeforeJournal(t *testing.T) {
	f, path := openJournal(t)
	dir := filepath.Dir(path)
	var mu sync.Mutex
	var problems []string
	// check reads the three files and notes every journal line whose
	// stream lines are not on file; when names the moment.
	check := func(when string) {
		j, _ := os.ReadFile(path)
		for _, name := range []string{"events.jsonl", "requests.jsonl"} {
			b, _ := os.ReadFile(filepath.Join(dir, name))
			if nj, ns := bytes.Count(j, []byte("\n")), bytes.Count(b, []byte("\n")); ns < nj {
				mu.Lock()
				problems = append(problems, fmt.Sprintf("%s: %d journal lines on file, %d lines of %s", when, nj, ns, name))
				mu.Unlock()
			}
		}
	}
	w := NewWriter(f, WithFlushDelay(time.Hour), withSync(func(f *os.File) error {
		check("at a sync")
		return fdatasync(f)
	}))
	streams := map[string]*Stream{}
	for _, name := range []string{"events.jsonl", "requests.jsonl"} {
		sf, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer sf.Close()
		streams[name] = w.Stream(name, writerFunc(func(p []byte) (int, error) {
			check("before a write of " + name)
			return sf.Write(p)
		}))
	}
	for i := range 4 {
		if err := streams["events.jsonl"].WriteLine(fmt.Appendf(nil, `{"ev":%d}`, i)); err != nil {
			t.Fatal(err)
		}
		if err := streams["requests.jsonl"].WriteLine(fmt.Appendf(nil, `{"rq":%d}`, i)); err != nil {
			t.Fatal(err)
		}
		m, err := w.Append(Host, fmt.Appendf(nil, `{"seq":%d}`, i))
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			if err := w.Wait(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Commits != 2 {
		t.Errorf("commits %d, want 2", st.Commits)
	}
	check("after Close")
	for _, p := range problems {
		t.Error(p)
	}
}
