package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/view"
)

// One accounting from the command line, against a stand-in Anthropic
// server that reports cache reads and writes: the request and task
// events, run.json, `fsd runs`, `fsd show` and `fsd show --requests` give the
// same four figures, and the workflow's prices give the same cost
// everywhere — priced by the --model that answered, not the manifests'.
func TestAccountingAcrossViews(t *testing.T) {
	srv, _ := scriptedAnthropicUsage(t, func(gen string, step int) fakeReply {
		if strings.Contains(gen, "| Task note") {
			return helloReplies[4]
		}
		return []fakeReply{helloReplies[0], helloReplies[1], helloReplies[2], helloReplies[3], helloReplies[5]}[step]
	}, map[string]any{"input_tokens": 10, "cache_creation_input_tokens": 30, "cache_read_input_tokens": 900, "output_tokens": 5})
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
	t.Setenv("ANTHROPIC_BASE_URL", srv.URL)
	wf := helloWorkflow(t, false)
	// The manifests name no model; scripted's price must not apply.
	appendFile(t, wf, "prices:\n  anthropic/claude-test: {input: 3, cached-input: 0.3, cache-write: 3.75, output: 15}\n  scripted: {input: 1000, output: 1000}\n")
	runs := filepath.Join(t.TempDir(), "runs")
	code, out, errs := fsd(t, "run", wf, "--model", "anthropic/claude-test", "--events", "json", "--runs-dir", runs)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// Six calls of 940 in (900 read, 30 written), 5 out.
	want := model.Usage{InputTokens: 6 * 940, CachedInputTokens: 6 * 900, CacheWriteTokens: 6 * 30, OutputTokens: 6 * 5}
	perCall := (10*3 + 900*0.3 + 30*3.75 + 5*15) / 1e6
	var task *event.Event
	for _, e := range events(t, out) {
		if e.Type == event.TaskCompleted {
			task = &e
		}
	}
	if task == nil || task.Usage == nil || *task.Usage != (model.Usage{InputTokens: 940, CachedInputTokens: 900, CacheWriteTokens: 30, OutputTokens: 5}) || !closeTo(task.Cost, perCall) {
		t.Errorf("task.completed %+v, want one call's usage and cost %v", task, perCall)
	}
	dirs, _ := os.ReadDir(runs)
	if len(dirs) != 1 {
		t.Fatalf("%d runs", len(dirs))
	}
	var sum runrecord.Summary
	b, err := os.ReadFile(filepath.Join(runs, dirs[0].Name(), "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Usage() != want || !closeTo(sum.Cost, 6*perCall) {
		t.Fatalf("run.json %+v cost %v; want %+v cost %v", sum.Usage(), sum.Cost, want, 6*perCall)
	}
	cost := view.Cost(sum.Cost)
	_, list, _ := fsd(t, "runs", "--runs-dir", runs)
	if fields := strings.Fields(strings.Split(list, "\n")[1]); !strings.Contains(list, "COST") ||
		!strings.Contains(strings.Join(fields, " "), "5640 5400 180 30 "+cost) {
		t.Errorf("fsd runs:\n%s\nwant 5640 in, 5400 cached, 180 written, 30 out, cost %s", list, cost)
	}
	_, detail, _ := fsd(t, "show", dirs[0].Name(), "--runs-dir", runs)
	if !strings.Contains(detail, "5640 in (5400 cached, 180 written), 30 out") || !strings.Contains(detail, cost) ||
		!strings.Contains(detail, "940 in (900 cached, 30 written), 5 out · "+view.Cost(perCall)) {
		t.Errorf("fsd show:\n%s", detail)
	}
	_, shown, _ := fsd(t, "show", dirs[0].Name(), "--runs-dir", runs, "--requests")
	if !strings.Contains(shown, view.Tokens(want)+" · cost "+cost) || !strings.Contains(shown, "tokens 940 in (900 cached, 30 written), 5 out · cost "+view.Cost(perCall)) {
		t.Errorf("fsd show --requests:\n%.600s", shown)
	}
}

func closeTo(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }
