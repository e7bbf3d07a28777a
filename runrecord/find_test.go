package runrecord_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/runrecord"
)

func TestFind(t *testing.T) {
	runs := t.TempDir()
	for _, id := range []string{
		"20261120-100000-aaaa1111",
		"20261120-100001-bbbb2222",
		"20261121-090000-cccc2222",
		"20261122-080000-dddd3333",
		"20261122-080000-dddd3333x", // another run whose id starts with the one above
		"100000-imported",           // a folder named by hand, starting with another's middle
	} {
		dir := filepath.Join(runs, id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, runrecord.RunFile), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A folder without run.json is not a run, whatever its name.
	if err := os.Mkdir(filepath.Join(runs, "20261123-000000-eeee4444"), 0o755); err != nil {
		t.Fatal(err)
	}
	in := func(id string) string { return filepath.Join(runs, id) }

	for _, tt := range []struct {
		name, run string
		want      string   // the folder found
		ambiguous []string // or the runs it could mean
		none      bool     // or no run at all
	}{
		{name: "exact id", run: "20261120-100000-aaaa1111", want: in("20261120-100000-aaaa1111")},
		{name: "exact id that prefixes another", run: "20261122-080000-dddd3333", want: in("20261122-080000-dddd3333")},
		{name: "folder path", run: in("20261121-090000-cccc2222"), want: in("20261121-090000-cccc2222")},
		{name: "unique prefix", run: "20261121", want: in("20261121-090000-cccc2222")},
		{name: "random tail", run: "aaaa1111", want: in("20261120-100000-aaaa1111")},
		{name: "middle", run: "100001", want: in("20261120-100001-bbbb2222")},
		{name: "a unique prefix wins over runs that contain it", run: "100000", want: in("100000-imported")},
		{name: "ambiguous prefix", run: "20261120", ambiguous: []string{"20261120-100000-aaaa1111", "20261120-100001-bbbb2222"}},
		{name: "ambiguous tail", run: "2222", ambiguous: []string{"20261120-100001-bbbb2222", "20261121-090000-cccc2222"}},
		{name: "no match", run: "ffff", none: true},
		{name: "folder without run.json", run: "eeee4444", none: true},
		{name: "path that is no record", run: filepath.Join(runs, "20261123-000000-eeee4444"), none: true},
		{name: "empty", run: "", none: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runrecord.Find(runs, tt.run)
			var amb *runrecord.AmbiguousError
			switch {
			case tt.none:
				if !errors.Is(err, runrecord.ErrNoRun) {
					t.Errorf("Find(%q) = %q, %v; want ErrNoRun", tt.run, got, err)
				}
			case tt.ambiguous != nil:
				if !errors.As(err, &amb) {
					t.Fatalf("Find(%q) = %q, %v; want an AmbiguousError", tt.run, got, err)
				}
				if d := cmp.Diff(tt.ambiguous, amb.Matches); d != "" {
					t.Errorf("matches (-want +got):\n%s", d)
				}
			case err != nil || got != tt.want:
				t.Errorf("Find(%q) = %q, %v; want %q", tt.run, got, err, tt.want)
			}
		})
	}
}

// An ambiguous RUN lists a few of the runs it matches, not hundreds.
func TestAmbiguousErrorListsFew(t *testing.T) {
	e := &runrecord.AmbiguousError{Run: "2026", RunsDir: "runs", Matches: []string{"a", "b", "c", "d", "e", "f", "g"}}
	want := `"2026" matches 7 runs in runs: a, b, c, d, e and 2 more; give more of the id`
	if got := e.Error(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// FindID takes ids only: a record folder elsewhere, or a path leading out
// of the runs folder, is no run, whatever a URL asks for.
func TestFindIDStaysInRunsDir(t *testing.T) {
	root := t.TempDir()
	runs := filepath.Join(root, "runs")
	for _, dir := range []string{filepath.Join(runs, "20261120-100000-aaaa1111"), filepath.Join(root, "elsewhere")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, runrecord.RunFile), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := runrecord.Find(runs, filepath.Join(root, "elsewhere")); err != nil || got != filepath.Join(root, "elsewhere") {
		t.Errorf("Find of a record folder = %q, %v", got, err)
	}
	for _, id := range []string{filepath.Join(root, "elsewhere"), "../elsewhere", "..", "."} {
		if got, err := runrecord.FindID(runs, id); !errors.Is(err, runrecord.ErrNoRun) {
			t.Errorf("FindID(%q) = %q, %v; want ErrNoRun", id, got, err)
		}
	}
	if got, err := runrecord.FindID(runs, "aaaa1111"); err != nil || got != filepath.Join(runs, "20261120-100000-aaaa1111") {
		t.Errorf("FindID by tail = %q, %v", got, err)
	}
}

// TestFindUnreadableRunsDir: a runs folder that cannot be read is that
// error, not "no such run", so a user is told what to fix; one that is
// not there holds no run.
func TestFindUnreadableRunsDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "runs")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runrecord.FindID(file, "8d7f19f8"); err == nil || errors.Is(err, runrecord.ErrNoRun) {
		t.Errorf("FindID in a file: %v, want the read error", err)
	}
	if _, err := runrecord.FindID(filepath.Join(t.TempDir(), "none"), "8d7f19f8"); !errors.Is(err, runrecord.ErrNoRun) {
		t.Errorf("FindID in a missing folder: %v, want ErrNoRun", err)
	}
}
