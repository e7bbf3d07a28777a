package natsboard

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/testlong"
)

// TestKillsWithManyInFlight: with a hundred tasks at a time published
// asynchronously, running, journaling and committing, a worker is killed
// (SIGKILL), and later the coordinator; fsd resume finishes the run. No
// task is lost, each has one committed outcome, a task is started again
// only when the killed worker had it and did not commit it, and the
// record holds each task's answer once.
func TestKillsWithManyInFlight(t *testing.T) {
	testlong.Skip(t)
	t.Parallel()
	const n = 400
	srv := runServer(t)
	url := srv.ClientURL()
	wf := fanout(t, n, "50ms")
	data, err := os.ReadFile(wf)
	must(t, err)
	must(t, os.WriteFile(wf, []byte(strings.Replace(string(data), "concurrency: 16", "concurrency: 100", 1)), 0o644))
	dir := filepath.Dir(wf)
	killed := worker(t, url, "wk", "--concurrency", "16")
	w2 := worker(t, url, "w2", "--concurrency", "16")
	runs := filepath.Join(dir, "runs")
	run := start(t, dir, nil, "run", wf, "--nats", url, "--runs-dir", runs)
	var rec string
	recorded := func(k int) func() bool {
		return func() bool {
			ents, _ := os.ReadDir(runs)
			if len(ents) != 1 {
				return false
			}
			rec = filepath.Join(runs, ents[0].Name())
			return len(transcripts(t, rec)) >= k
		}
	}
	until(t, "50 tasks in the record", recorded(50))
	killed.kill()
	w3 := worker(t, url, "w3", "--concurrency", "16")
	until(t, "150 tasks in the record", recorded(150))
	run.kill()
	out, err := os.Create(filepath.Join(dir, "events.out"))
	must(t, err)
	defer out.Close()
	start(t, dir, out, "resume", runID(rec), "--runs-dir", runs, "--events", "json").wait(t)
	if got := lastLine(readFile(t, out.Name())); !strings.Contains(got, `"answer":"joined join"`) {
		t.Fatalf("resumed run's end: %s", got)
	}

	ids := []string{"join"}
	for i := range n {
		ids = append(ids, fmt.Sprintf("t%d", i))
	}
	first, survivors := started(killed.output()), started(w2.output(), w3.output())
	after := transcripts(t, rec)
	lost := 0 // tasks the killed worker started and did not commit
	for _, id := range ids {
		o, values := outcome(t, url, runID(rec), id, 1)
		if values != 1 {
			t.Errorf("task %s: %d values under its key, want 1", id, values)
		}
		if first[id] > 0 && o.Worker != "wk" {
			lost++
		}
		switch {
		case o.Worker == "wk" && survivors[id] != 0:
			t.Errorf("task %s committed by the killed worker ran again %d times", id, survivors[id])
		case survivors[id] > 1:
			t.Errorf("task %s ran %d times on the workers that lived", id, survivors[id])
		case first[id]+survivors[id] == 0:
			t.Errorf("task %s never started", id)
		}
		want := "done " + id
		if id == "join" {
			want = "joined join"
		}
		if c := strings.Count(strings.Join(after[id], "\n"), want); c != 1 {
			t.Errorf("task %s: its answer is %d times in its recorded transcript", id, c)
		}
	}
	if lost == 0 {
		t.Error("the killed worker had no task in flight: nothing was probed")
	}
	t.Logf("%d tasks were in flight on the killed worker", lost)
	completed := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(readFile(t, out.Name())))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e struct{ Type, Task string }
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type == "task.completed" {
			completed[e.Task]++
		}
	}
	if len(completed) != n+1 {
		t.Errorf("%d tasks completed in the resumed run, want %d", len(completed), n+1)
	}
	for id, c := range completed {
		if c != 1 {
			t.Errorf("task %s completed %d times in the resumed run", id, c)
		}
	}
}
