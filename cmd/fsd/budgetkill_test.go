package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/fsdrun/fsd/runrecord"
)

// B6, B7: fsd is killed (-9) while a model call under an input budget is
// in flight, then resumed. The call's reservation was on file before the
// provider got the request, and the resume counts it as spent: under a
// budget that has room for the call once but not twice the resume is
// refused without asking the model; under a raised one it makes the call
// again, and the run's totals hold only what the provider reported.
func TestBudgetHoldsAcrossAKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs fsd as a subprocess")
	}
	t.Setenv("OPENAI_API_KEY", "sk-test")
	got, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	srv, bodies := fakeOpenAIFunc(t, func(i int, _ []byte) (fakeReply, bool) {
		if i == 0 {
			close(got)
			<-release // until the process that asked is dead
		}
		return fakeReply{text: "done"}, true
	}, map[string]any{"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105})
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // before the server closes
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")

	dir := t.TempDir()
	wf, runs := filepath.Join(dir, "b.workflow.yaml"), filepath.Join(dir, "runs")
	budget := func(n int) {
		write(t, wf, fmt.Sprintf("name: b\nmodel: openai/gpt-test\nhost: {prompt: You answer.}\ninput: Say done.\nlimits: {max-input-tokens: %d}\n", n))
	}
	budget(1_000_000)
	cmd, _, errb := fsdProc("run", wf, "--runs-dir", runs)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-got:
	case err := <-exited:
		t.Fatalf("the run ended before its first model call: %v\n%s", err, errb)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	once.Do(func() { close(release) })

	ids, err := os.ReadDir(runs)
	if err != nil || len(ids) != 1 {
		t.Fatalf("runs: %v %v", ids, err)
	}
	id := ids[0].Name()
	held := heldOf(t, filepath.Join(runs, id))
	if held <= 0 {
		t.Fatal("the killed run's request line holds no reservation")
	}

	// Room for the call once, not twice: refused, the model not asked.
	budget(held + held/2)
	code, _, errs := fsd(t, "resume", id, "--runs-dir", runs)
	want := fmt.Sprintf("%d input tokens used and the next call needs %d", held, held)
	if code == exitOK || !strings.Contains(errs, want) {
		t.Fatalf("resume under room for one call: exit %d: %s\nwant the budget error %q", code, errs, want)
	}
	if !strings.Contains(errs, "model calls were in flight when the run stopped") {
		t.Errorf("the resume did not say why it counts the call in doubt:\n%s", errs)
	}
	if n := len(bodies()); n != 1 {
		t.Fatalf("the provider got %d requests, want only the killed run's", n)
	}

	// Raised: the call is made again and answered.
	budget(3 * held)
	code, out, errs := fsd(t, "resume", id, "--runs-dir", runs)
	if code != exitOK || strings.TrimSpace(out) != "done" {
		t.Fatalf("resume under a raised budget: exit %d: %s%s", code, out, errs)
	}
	sum, err := runrecord.ReadSummary(filepath.Join(runs, id))
	if err != nil {
		t.Fatal(err)
	}
	if sum.InputTokens != 100 {
		t.Errorf("run.json: %d input tokens, want the 100 the provider reported (a call in doubt is counted by the budgets only)", sum.InputTokens)
	}
}

// heldOf is the input tokens the request lines of a record reserved.
func heldOf(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, runrecord.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l runrecord.Line
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Kind == runrecord.KindRequest && l.Held != nil {
			n += l.Held.InputTokens
		}
	}
	return n
}
