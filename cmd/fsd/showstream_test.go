package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	fanoutwf "github.com/fsdrun/fsd/internal/fanout"
	"github.com/fsdrun/fsd/runrecord"
)

// fanoutRun runs the fan-out of n tasks with its record and returns the
// record's folder.
func fanoutRun(t testing.TB, n int) string {
	t.Helper()
	wf, err := fanoutwf.Write(t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir()
	var out, errb bytes.Buffer
	if code := run([]string{"run", wf, "--runs-dir", runs}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	ents, err := os.ReadDir(runs)
	if err != nil || len(ents) != 1 {
		t.Fatalf("runs: %v %v", ents, err)
	}
	return filepath.Join(runs, ents[0].Name())
}

// cutAfterFirst is a writer that, once a generator's calls have been
// written to it, empties the record's journal: a reader that read the
// whole record before writing has what it needs already; one that reads
// a generator at a time fails on the next.
type cutAfterFirst struct {
	bytes.Buffer
	journal string
	mark    string
	cut     bool
}

func (c *cutAfterFirst) Write(p []byte) (int, error) {
	if !c.cut && strings.Contains(c.String()+string(p), c.mark) {
		c.cut = true
		if err := os.Truncate(c.journal, 0); err != nil {
			return 0, err
		}
	}
	return c.Buffer.Write(p)
}

// G5: fsd show --requests of a whole run writes each generator's calls
// before it reads the next generator, in text and in JSON.
func TestShowRequestsStreams(t *testing.T) {
	dir := fanoutRun(t, 20)
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			var whole bytes.Buffer
			if err := showRequests(&whole, dir, showFlags{requests: true, format: format}); err != nil {
				t.Fatal(err)
			}
			journal := filepath.Join(dir, runrecord.JournalFile)
			saved, err := os.ReadFile(journal)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.WriteFile(journal, saved, 0o644) })
			mark := "##### task t0 "
			if format == "json" {
				mark = `"gen":"tasks/t1.jsonl"`
			}
			w := &cutAfterFirst{journal: journal, mark: mark}
			err = showRequests(w, dir, showFlags{requests: true, format: format})
			if !w.cut {
				t.Fatalf("%q never written; output:\n%s", mark, whole.String())
			}
			if err == nil {
				t.Errorf("every generator was read before the first was written")
			}
			if !strings.HasPrefix(whole.String(), w.String()) {
				t.Errorf("what was written before the cut is not the output's start")
			}
			if err := os.WriteFile(journal, saved, 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// G11: fsd show --requests reads a generator whose steps come from its
// transcript (a task run on a worker) once: the heading's count reads it,
// and its text waits for its turn; emptying the journal once the heading
// is written leaves the output whole.
func TestShowRequestsReadsTranscriptOnce(t *testing.T) {
	dir := fanoutRun(t, 5)
	path := filepath.Join(dir, runrecord.RequestsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if !strings.Contains(l, `"gen":"tasks/`) {
			kept = append(kept, l) // as a worker's tasks: no request on record
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(kept, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	var whole bytes.Buffer
	if err := showRequests(&whole, dir, showFlags{requests: true, format: "text"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(whole.String(), "##### task t0 ") || !strings.Contains(whole.String(), "6 model calls") {
		t.Fatalf("the tasks' steps are not shown from their transcripts:\n%s", whole.String())
	}
	w := &cutAfterFirst{journal: filepath.Join(dir, runrecord.JournalFile), mark: "run "}
	if err := showRequests(w, dir, showFlags{requests: true, format: "text"}); err != nil {
		t.Fatalf("a transcript was read again after the heading: %v", err)
	}
	if !w.cut || w.String() != whole.String() {
		t.Errorf("cut %v; the output differs:\n%s", w.cut, w.String())
	}
}
