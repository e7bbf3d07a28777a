//go:build linux

package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSwapIntoRecordsRace (T12) races Write against a program of the
// run that swaps a folder and a symlink into the records back and forth
// (renameat2 RENAME_EXCHANGE), as a hostile skill's script can: no write
// with content lands in the records, whichever way each swap falls.
// Before the open file was checked, 39 to 175 of the 2,000 did.
func TestSwapIntoRecordsRace(t *testing.T) {
	f := newFixture(t)
	fsd := filepath.Join(f.dir, ".fsd")
	runs := filepath.Join(fsd, "runs")
	if err := os.MkdirAll(runs, 0o755); err != nil {
		t.Fatal(err)
	}
	ws, err := Open(f.dir, fsd)
	if err != nil {
		t.Fatal(err)
	}
	f.ws = ws
	d, l := filepath.Join(f.dir, "d"), filepath.Join(f.dir, "L")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".fsd/runs", l); err != nil {
		t.Fatal(err)
	}
	defer func(s func(*os.File) error) { syncFile = s }(syncFile)
	syncFile = func(*os.File) error { return nil } // the race, not the disk
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, l, unix.RENAME_EXCHANGE)
		}
	}()
	for i := range 2000 {
		f.call(t, Write, fmt.Sprintf(`{"file_path":"d/w%d","content":"forged"}`, i))
	}
	stop.Store(true)
	<-done
	entries, err := os.ReadDir(runs)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if b, _ := os.ReadFile(filepath.Join(runs, e.Name())); len(b) > 0 {
			t.Errorf("Write put %s in the run records: %q", e.Name(), b)
		}
	}
}
