package journal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func openJournal(t *testing.T) (*os.File, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, path
}

// Lines name their generator, keep the entry's fields after the
// generator's, and parse back into Head and the entry.
func TestWriterLines(t *testing.T) {
	f, path := openJournal(t)
	w := NewWriter(f)
	for _, a := range []struct {
		g     Gen
		entry string
	}{
		{Host, `{"seq":0,"text":"hi"}`},
		{Gen{Task: "a\"b/c", Attempt: 2}, `{"seq":0}` + "\n"},
		{Gen{Task: "t1"}, `{}`},
	} {
		if _, err := w.Append(a.g, []byte(a.entry)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Append(Host, []byte(`not json`)); err == nil {
		t.Error("a non-object entry was appended")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	want := `{"gen":"host","seq":0,"text":"hi"}
{"gen":"task","task":"a\"b/c","attempt":2,"seq":0}
{"gen":"task","task":"t1","attempt":1}
`
	if string(b) != want {
		t.Fatalf("journal:\n%s\nwant:\n%s", b, want)
	}
	var gens []Gen
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var h struct {
			Head
			Seq int `json:"seq"`
		}
		if err := json.Unmarshal([]byte(line), &h); err != nil {
			t.Fatal(err)
		}
		gens = append(gens, h.Generator())
	}
	if fmt.Sprint(gens) != fmt.Sprint([]Gen{Host, {Task: "a\"b/c", Attempt: 2}, {Task: "t1", Attempt: 1}}) {
		t.Errorf("generators read back: %v", gens)
	}
}

// Group commit: waiters that wait together share fdatasyncs, every Wait
// returns once a finished sync found its line in the file, every sync
// counts as one commit, and lines keep their append order per generator.
func TestWriterGroupCommit(t *testing.T) {
	f, path := openJournal(t)
	// durable is how many lines the file held when the last finished
	// sync started: the lines it made durable.
	var syncs, durable atomic.Int64
	w := NewWriter(f, withSync(func(f *os.File) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := fdatasync(f); err != nil {
			return err
		}
		syncs.Add(1)
		durable.Store(int64(bytes.Count(b, []byte("\n"))))
		return nil
	}))
	const workers, steps = 16, 50
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := Gen{Task: fmt.Sprint("t", i), Attempt: 1}
			for s := range steps {
				m, err := w.Append(g, fmt.Appendf(nil, `{"seq":%d}`, s))
				if err != nil {
					t.Error(err)
					return
				}
				if err := w.Wait(m); err != nil {
					t.Error(err)
					return
				}
				if n := durable.Load(); n < int64(m) {
					t.Errorf("wait for line %d returned when a sync had covered %d lines", m, n)
					return
				}
			}
		}()
	}
	wg.Wait()
	st := w.Stats()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if st.Lines != workers*steps || st.Commits == 0 || st.Commits > st.Lines {
		t.Errorf("stats %+v", st)
	}
	if n := syncs.Load(); int64(st.Commits) != n {
		t.Errorf("%d commits counted, %d syncs made", st.Commits, n)
	}
	t.Logf("%d lines, %d commits, %d writes", st.Lines, st.Commits, st.Writes)
	b, _ := os.ReadFile(path)
	next := map[string]int{}
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var l struct {
			Head
			Seq int `json:"seq"`
		}
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if l.Seq != next[l.Task] {
			t.Fatalf("%s: seq %d after %d", l.Task, l.Seq, next[l.Task]-1)
		}
		next[l.Task]++
	}
	if len(next) != workers {
		t.Errorf("%d generators in the file", len(next))
	}
}

// A wait is a commit: the line is in the file when Wait returns, not
// FlushDelay later; an unwaited line and a stream's bytes arrive without
// anybody waiting.
func TestWriterWaitWritesAtOnce(t *testing.T) {
	f, path := openJournal(t)
	var side bytes.Buffer
	var sideMu sync.Mutex
	w := NewWriter(f, WithFlushDelay(time.Hour))
	s := w.Stream("events.jsonl", writerFunc(func(p []byte) (int, error) {
		sideMu.Lock()
		defer sideMu.Unlock()
		return side.Write(p)
	}))
	s.Write([]byte("{\"type\":\"x\"}\n"))
	m, _ := w.Append(Host, []byte(`{"seq":0}`))
	if err := w.Wait(m); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !bytes.Contains(b, []byte(`"seq":0`)) {
		t.Errorf("after Wait the file holds %q", b)
	}
	sideMu.Lock()
	if side.String() != "{\"type\":\"x\"}\n" {
		t.Errorf("the stream was not flushed with the commit: %q", side.String())
	}
	sideMu.Unlock()
	if st := w.Stats(); st.Commits != 1 {
		t.Errorf("commits %d, want 1", st.Commits)
	}
	w.Close()

	// Nobody waits: the delay flushes.
	f2, path2 := openJournal(t)
	w2 := NewWriter(f2, WithFlushDelay(time.Millisecond))
	m2, _ := w2.Append(Host, []byte(`{"seq":0}`))
	waitWritten(w2, m2)
	if b, _ := os.ReadFile(path2); !bytes.Contains(b, []byte(`"seq":0`)) {
		t.Fatalf("after the delay the file holds %q", b)
	}
	if st := w2.Stats(); st.Commits != 0 {
		t.Errorf("an unwaited flush synced: %+v", st)
	}
	w2.Close()
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// A failed write stops the journal: the waiter gets the error, OnError
// hears it once, and later appends fail.
func TestWriterFailure(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	heard := make(chan error, 2)
	w := NewWriter(f, OnError(func(err error) { heard <- err }))
	m, _ := w.Append(Host, []byte(`{"seq":0}`))
	if err := w.Wait(m); err == nil {
		t.Fatal("a write to /dev/full succeeded")
	}
	if _, err := w.Append(Host, []byte(`{"seq":1}`)); err == nil {
		t.Error("an append after the failure succeeded")
	}
	if err := <-heard; err == nil || !strings.Contains(err.Error(), "/dev/full") {
		t.Errorf("OnError heard %v", err)
	}
	if err := w.Close(); err == nil {
		t.Error("Close after a failure reports nothing")
	}
	if _, err := w.Append(Host, []byte(`{}`)); err == nil {
		t.Error("append after Close")
	}
}

// BenchmarkWriterCommit measures a committed line with 4 and 64
// concurrent waiters.
func BenchmarkWriterCommit(b *testing.B) {
	for _, n := range []int{1, 4, 64} {
		b.Run(fmt.Sprint("waiters=", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "j.jsonl")
			f, _ := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			defer f.Close()
			w := NewWriter(f)
			defer w.Close()
			entry := []byte(`{"seq":0,"kind":"message","message":{"role":"assistant","text":"done"}}`)
			b.SetParallelism(n)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					m, _ := w.Append(Host, entry)
					_ = w.Wait(m)
				}
			})
			st := w.Stats()
			b.ReportMetric(float64(st.Commits)/float64(b.N), "syncs/op")
		})
	}
}

// BenchmarkFdatasync is one line appended and made durable by itself,
// no Writer around it: the cost of one fdatasync on the disk that holds
// TMPDIR, what a run's commits multiply into its floor
// (bench/fanout.sh).
func BenchmarkFdatasync(b *testing.B) {
	path := filepath.Join(b.TempDir(), "j.jsonl")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	line := []byte(`{"gen":"task","task":"t1","attempt":1,"seq":1,"kind":"message","message":{"role":"assistant","text":"done t1"}}` + "\n")
	for b.Loop() {
		if _, err := f.Write(line); err != nil {
			b.Fatal(err)
		}
		if err := fdatasync(f); err != nil {
			b.Fatal(err)
		}
	}
}

// notifyWriter tells wrote about every write it takes.
type notifyWriter struct{ wrote chan int }

func (n notifyWriter) Write(p []byte) (int, error) {
	n.wrote <- len(p)
	return len(p), nil
}

// A journal or stream buffer that reaches flushSize is written then,
// without a waiter and before FlushDelay: a large run's buffers stay
// bounded.
func TestWriterFlushesFullBuffers(t *testing.T) {
	line := bytes.Repeat([]byte("x"), 1<<10)
	entry := []byte(`{"text":"` + string(line) + `"}`)
	t.Run("stream", func(t *testing.T) {
		f, _ := openJournal(t)
		w := NewWriter(f, WithFlushDelay(time.Hour))
		defer w.Close()
		side := notifyWriter{wrote: make(chan int, 16)}
		s := w.Stream("side", side)
		for range flushSize / len(line) {
			if err := s.WriteLine(line); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case n := <-side.wrote:
			if n < flushSize {
				t.Errorf("the stream wrote %d bytes, want its whole buffer", n)
			}
		case <-time.After(time.Minute):
			t.Fatal("a full stream buffer was not written within a minute; FlushDelay is an hour")
		}
	})
	t.Run("journal", func(t *testing.T) {
		r, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer pw.Close()
		w := NewWriter(pw, WithFlushDelay(time.Hour))
		for range flushSize / len(line) {
			if _, err := w.Append(Host, entry); err != nil {
				t.Fatal(err)
			}
		}
		r.SetReadDeadline(time.Now().Add(time.Minute))
		buf := make([]byte, 1024)
		if n, err := r.Read(buf); err != nil || n == 0 {
			t.Fatalf("a full journal buffer was not written within a minute (%v); FlushDelay is an hour", err)
		}
		go io.Copy(io.Discard, r) // let Close write the rest
		w.Close()
	})
}

// Flush writes what was appended and streamed before it, though nobody
// waits and FlushDelay is far off, and syncs nothing.
func TestWriterFlush(t *testing.T) {
	f, path := openJournal(t)
	var side bytes.Buffer
	var sideMu sync.Mutex
	w := NewWriter(f, WithFlushDelay(time.Hour))
	s := w.Stream("requests.jsonl", writerFunc(func(p []byte) (int, error) {
		sideMu.Lock()
		defer sideMu.Unlock()
		return side.Write(p)
	}))
	for _, line := range []string{"a", "b"} {
		s.Write([]byte(line + "\n"))
		if _, err := w.Append(Host, []byte(`{"line":"`+line+`"}`)); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		sideMu.Lock()
		if got := side.String(); !strings.HasSuffix(got, line+"\n") {
			t.Errorf("after Flush the stream's file holds %q", got)
		}
		sideMu.Unlock()
		if b, _ := os.ReadFile(path); !bytes.Contains(b, []byte(`"line":"`+line+`"`)) {
			t.Errorf("after Flush the journal holds %q", b)
		}
	}
	if st := w.Stats(); st.Commits != 0 {
		t.Errorf("Flush synced: %+v", st)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != ErrClosed {
		t.Errorf("Flush after Close: %v, want ErrClosed", err)
	}
}
