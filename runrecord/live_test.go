package runrecord

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/model"
)

// A running run's record has its tokens only in requests.jsonl until it
// ends: a listing adds them up, so it does not read 0.
func TestReadRunCountsARunningRunsTokens(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "20261201-100000-abcd1234")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(status Status) {
		b, _ := json.Marshal(Summary{ID: filepath.Base(dir), Status: status, Started: time.Now(), PID: os.Getpid()})
		if err := os.WriteFile(filepath.Join(dir, RunFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(Running)
	var lines []byte
	for _, u := range []model.Usage{{InputTokens: 100, OutputTokens: 10}, {InputTokens: 50, CachedInputTokens: 40, OutputTokens: 5}} {
		b, _ := json.Marshal(Line{Kind: KindResponse, Usage: &u, Cost: 0.5})
		lines = append(append(lines, b...), '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, RequestsFile), lines, 0o644); err != nil {
		t.Fatal(err)
	}
	lock, err := journal.Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != Running || s.InputTokens != 150 || s.CachedInputTokens != 40 || s.OutputTokens != 15 || s.Cost != 1 {
		t.Errorf("running run: status %s, tokens %d in (%d cached), %d out, cost %v; want 150 (40), 15, 1",
			s.Status, s.InputTokens, s.CachedInputTokens, s.OutputTokens, s.Cost)
	}
	lock.Unlock()
	// A run that ended has its figures in run.json, which is the truth.
	write(Finished)
	if s, _ := ReadRun(dir); s.InputTokens != 0 {
		t.Errorf("finished run: %d input tokens from requests.jsonl, want run.json's 0", s.InputTokens)
	}
}
