package ui_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsdrun/fsd/internal/keytest"
	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/ui"
)

// TestMain gives the runs the tests record a key of their own, and stops
// the chromium the browser tests shared.
func TestMain(m *testing.M) {
	code := keytest.Main(m)
	stopChromium()
	os.Exit(code)
}

// TestKilledRunIsNotLive: the run page tells a live run by its folder's
// lock: a run.json left saying running by a killed process (its process
// id alive again, reused) is interrupted and not live, so the page stops
// waiting for it; while a process holds the folder it is live.
func TestKilledRunIsNotLive(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "20261130-100000-dead0001")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(runrecord.Summary{ID: filepath.Base(dir), Status: runrecord.Running, PID: os.Getpid(), Started: time.Now()})
	if err := os.WriteFile(filepath.Join(dir, runrecord.RunFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	view := func() ui.RunView {
		t.Helper()
		rec, err := runrecord.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		return ui.View(rec, time.Now())
	}
	if v := view(); v.Live || v.Summary.Status != runrecord.Interrupted {
		t.Errorf("killed run: live %v, status %s; want not live, interrupted", v.Live, v.Summary.Status)
	}
	lock, err := journal.Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	if v := view(); !v.Live || v.Summary.Status != runrecord.Running {
		t.Errorf("held run: live %v, status %s; want live, running", v.Live, v.Summary.Status)
	}
}
