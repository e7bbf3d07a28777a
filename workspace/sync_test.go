package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Write and Edit flush the file before they answer: a resume takes a
// completed call's journaled result and never writes the file again, so
// its content must be on disk by the time the step that made it commits.
func TestWriteAndEditSyncTheFile(t *testing.T) {
	var synced []string
	defer func(f func(*os.File) error) { syncFile = f }(syncFile)
	syncFile = func(f *os.File) error {
		synced = append(synced, filepath.Base(f.Name()))
		return f.Sync()
	}
	f := newFixture(t)
	for _, c := range []struct{ tool, args string }{
		{"Write", `{"file_path":"new.txt","content":"fresh"}`},
		{"Edit", `{"file_path":"notes.txt","old_string":"alpha","new_string":"omega"}`},
	} {
		if got, isErr := f.call(t, c.tool, c.args); isErr {
			t.Fatalf("%s: %s", c.tool, got)
		}
	}
	if want := []string{"new.txt", "notes.txt"}; strings.Join(synced, ",") != strings.Join(want, ",") {
		t.Errorf("synced %q, want %q", synced, want)
	}
}
