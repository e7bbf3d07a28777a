package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/runrecord"
)

// K2: a handle key file fsd cannot use is said on stderr, with how to
// mend it, and the run goes on with handles drawn anew; a key file others
// may read is used and said too.
func TestHandleKeyWarnings(t *testing.T) {
	dir := t.TempDir()
	wf := filepath.Join(dir, "k.workflow.yaml")
	write(t, wf, "name: k\nmodel: scripted\nscript: k.script.yaml\nhost: {prompt: hi}\ninput: go\n")
	write(t, filepath.Join(dir, "k.script.yaml"), "host: [{say: done}]\n")
	folder := filepath.Join(dir, runrecord.ProjectFolder)
	key := filepath.Join(folder, runrecord.HandleKeyFile)
	if err := os.MkdirAll(folder, 0o700); err != nil {
		t.Fatal(err)
	}
	run := func() (string, runrecord.Summary) {
		t.Helper()
		runs := filepath.Join(t.TempDir(), "runs")
		code, _, errs := fsd(t, "run", wf, "--runs-dir", runs)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		recs, err := os.ReadDir(runs)
		if err != nil || len(recs) != 1 {
			t.Fatalf("records %v, %v; want one", recs, err)
		}
		sum, err := runrecord.ReadSummary(filepath.Join(runs, recs[0].Name()))
		if err != nil {
			t.Fatal(err)
		}
		return errs, sum
	}

	write(t, key, "")
	errs, sum := run()
	if !strings.Contains(errs, key+" is not a key fsd wrote") || !strings.Contains(errs, "no prompt cache") {
		t.Errorf("an empty key file: stderr %q; want it named, with what it costs", errs)
	}
	if sum.HandleKey != "" || sum.Seed == "" {
		t.Errorf("an empty key file: run.json handle_key %q, seed %q; want a seed", sum.HandleKey, sum.Seed)
	}

	if err := os.Remove(key); err != nil {
		t.Fatal(err)
	}
	if errs, sum = run(); strings.Contains(errs, "handle key") || sum.HandleKey == "" {
		t.Fatalf("a fresh key: stderr %q, run.json handle_key %q; want no word of it and its id", errs, sum.HandleKey)
	}
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	errs, open := run()
	if !strings.Contains(errs, "readable by others") || !strings.Contains(errs, "chmod 600") || open.HandleKey != sum.HandleKey {
		t.Errorf("a key others may read: stderr %q, handle_key %q; want a warning and the key used (%q)", errs, open.HandleKey, sum.HandleKey)
	}
}
