package ui_test

import (
	"bytes"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/internal/fanout"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/ui"
)

// fanoutRun runs the fan-out of n tasks and returns its record's folder.
func fanoutRun(t *testing.T, n int) string {
	t.Helper()
	wf, err := fanout.Write(t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir()
	if _, done := startExample(t, runs, "r1", example{workflow: wf}); <-done != nil {
		t.Fatal("the fan-out failed")
	}
	return filepath.Join(runs, "r1")
}

// G7: fsd report's page, written a generator at a time from the record
// on disk, is byte for byte the page of the record read whole.
func TestWriteReportIsReport(t *testing.T) {
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	for name, dir := range map[string]string{"example": exampleRun(t), "fanout": fanoutRun(t, 30)} {
		t.Run(name, func(t *testing.T) {
			rec, err := runrecord.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			var whole, streamed bytes.Buffer
			if err := ui.ReportAt(&whole, rec, []string{secret}, now); err != nil {
				t.Fatal(err)
			}
			if err := ui.WriteReportAt(&streamed, dir, []string{secret}, now); err != nil {
				t.Fatal(err)
			}
			if whole.String() != streamed.String() {
				t.Errorf("the pages differ (-whole +streamed):\n%s", cmp.Diff(whole.String(), streamed.String()))
			}
			if strings.Contains(streamed.String(), secret) {
				t.Error("the streamed page shows the planted key")
			}
		})
	}
}

// exampleRun runs the fan-out example (its tasks' tools and transcripts)
// and returns its record's folder.
func exampleRun(t *testing.T) string {
	t.Helper()
	runs := t.TempDir()
	if _, done := startExample(t, runs, "r1", example{}); <-done != nil {
		t.Fatal("the example failed")
	}
	return filepath.Join(runs, "r1")
}

// cutAfter is a writer that empties a file once mark has been written to
// it: a writer that read everything first is done reading by then.
type cutAfter struct {
	bytes.Buffer
	file, mark string
	cut        bool
}

func (c *cutAfter) Write(p []byte) (int, error) {
	n, err := c.Buffer.Write(p)
	if !c.cut && strings.Contains(c.String(), c.mark) {
		c.cut = true
		if err := os.Truncate(c.file, 0); err != nil {
			return n, err
		}
	}
	return n, err
}

// G7: fsd report writes each generator before it reads the next.
func TestWriteReportStreams(t *testing.T) {
	dir := fanoutRun(t, 20)
	w := &cutAfter{file: filepath.Join(dir, runrecord.JournalFile), mark: `"name":"tasks/t0.jsonl"`}
	err := ui.WriteReport(w, dir, nil)
	if !w.cut {
		t.Fatalf("t0's generator never written:\n%s", w.String())
	}
	if err == nil {
		t.Error("every generator was read before the first was written")
	}
}

// G6: the run page's API sends a page of tasks at a time, with the host's
// generator and those of the page's tasks, and the pages together are
// the run's view; a generator of a task on another page is not read.
func TestViewPages(t *testing.T) {
	n := ui.PageTasks + 50
	dir := fanoutRun(t, n)
	rec, err := runrecord.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	whole := ui.View(rec, now)
	gens, host := map[string]ui.GenView{}, 0
	for _, g := range whole.Gens {
		gens[g.Name] = g
		if g.Task == "" {
			host++
		}
	}
	var tasks []ui.TaskView
	for from := 0; from < n+1; from += ui.PageTasks {
		v, err := ui.ViewPage(dir, from, now)
		if err != nil {
			t.Fatal(err)
		}
		if v.TasksTotal != n+1 || v.From != from || len(v.Tasks) != min(ui.PageTasks, n+1-from) {
			t.Fatalf("from %d: %d tasks of %d from %d", from, len(v.Tasks), v.TasksTotal, v.From)
		}
		tasks = append(tasks, v.Tasks...)
		page := map[string]bool{"": true}
		for _, tv := range v.Tasks {
			page[tv.ID] = true
		}
		for _, g := range v.Gens {
			if !page[g.Task] {
				t.Errorf("from %d: generator %s of a task on another page", from, g.Name)
			}
			if d := cmp.Diff(gens[g.Name], g); d != "" {
				t.Errorf("from %d: %s differs (-View +ViewPage):\n%s", from, g.Name, d)
			}
		}
		if len(v.Gens) != len(v.Tasks)+host {
			t.Errorf("from %d: %d generators for %d tasks and %d of the host", from, len(v.Gens), len(v.Tasks), host)
		}
	}
	if d := cmp.Diff(whole.Tasks, tasks); d != "" {
		t.Errorf("the pages' tasks differ from the view's (-View +pages):\n%s", d)
	}
	// A broken line of a task on the last page, in the journal or the
	// events, stops a read of the whole record, not the first page.
	last := "t" + strconv.Itoa(n-1)
	for file, line := range map[string]string{
		runrecord.JournalFile: `{"gen":"task","task":"` + last + `","entry":`,
		runrecord.EventsFile:  `{"type":"task.started","run":"r1","task":"` + last + `",`,
	} {
		path := filepath.Join(dir, file)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, line+"\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := runrecord.Open(dir); err == nil {
			t.Fatalf("Open read past a broken line of %s", file)
		}
		if _, err := ui.ViewPage(dir, 0, now); err != nil {
			t.Errorf("the first page read a task of the last: %v", err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// G8: a run page of more than a page of tasks draws one page — served a
// page at a time by fsd ui, cut to one by a report's page, which holds
// them all — and its links step to the next and back.
func TestUIPagesALargeRun(t *testing.T) {
	ctx, cancel := browser(t)
	defer cancel()
	n := ui.PageTasks + 50
	dir := fanoutRun(t, n)
	srv := httptest.NewServer(ui.NewServer(filepath.Dir(dir), nil).Handler())
	defer srv.Close()
	report := filepath.Join(t.TempDir(), "run.html")
	f, err := os.Create(report)
	if err != nil {
		t.Fatal(err)
	}
	if err := ui.WriteReport(f, dir, nil); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for name, url := range map[string]string{"server": srv.URL + "/run/r1", "report": "file://" + report} {
		do(t, ctx, chromedp.Navigate(url), chromedp.WaitVisible(`#board g.node[data-task="t0"]`))
		if nodes, gens := count(t, ctx, "#board g.node"), count(t, ctx, "details.gen"); nodes != ui.PageTasks || gens != ui.PageTasks {
			t.Errorf("%s: first page draws %d tasks and %d transcripts, want %d", name, nodes, gens, ui.PageTasks)
		}
		do(t, ctx, chromedp.Click(`#pages a`), chromedp.WaitVisible(`#board g.node[data-task="join"]`))
		if nodes, gens := count(t, ctx, "#board g.node"), count(t, ctx, "details.gen"); nodes != 51 || gens != 51 {
			t.Errorf("%s: second page draws %d tasks and %d transcripts, want 51", name, nodes, gens)
		}
		do(t, ctx, chromedp.Click(`#pages a`), chromedp.WaitVisible(`#board g.node[data-task="t0"]`))
	}
}
