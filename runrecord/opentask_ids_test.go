package runrecord_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/runrecord"
)

// G20: one task's read is the whole record's read of that task for ids
// that are a prefix of another (t1, t10), that JSON escapes, that are not
// ASCII or that look like a transcript's path, and a torn last line (a
// killed run) naming a task is skipped by both.
func TestOpenTaskAwkwardIDs(t *testing.T) {
	ids := []string{"t1", "t10", `a"b`, "<x>&y", "é", "tasks/t1", "T1"}
	dir := t.TempDir()
	wf, script := "name: ids\nmodel: scripted\nscript: ids.script.yaml\ntasks:\n", "tasks:\n"
	for _, id := range ids {
		wf += "  - {id: '" + id + "', goal: g}\n"
		script += "  '" + id + "': [{say: 'done \"t1\" t10'}]\n"
	}
	wf += "input: go\n"
	for name, text := range map[string]string{"ids.workflow.yaml": wf, "ids.script.yaml": script} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rec, _ := runExample(t, filepath.Join(dir, "ids.workflow.yaml"), 0)
	for _, f := range []string{runrecord.EventsFile, runrecord.JournalFile, runrecord.RequestsFile} {
		f, err := os.OpenFile(filepath.Join(rec.Dir, f), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.WriteString(`{"gen":"task","task":"t1","kind":"request","type":"task.started","cut`)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	whole, err := runrecord.Open(rec.Dir)
	if err != nil {
		t.Fatalf("Open of a record with torn last lines: %v", err)
	}
	for _, id := range ids {
		one, err := runrecord.OpenTask(rec.Dir, id, false)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		var gens []*runrecord.Gen
		for _, g := range whole.Gens {
			if g.Task == id {
				gens = append(gens, g)
			}
		}
		if len(gens) != 1 {
			t.Fatalf("%s: the whole record holds %d of its generators", id, len(gens))
		}
		if d := cmp.Diff(gens, one.Gens); d != "" {
			t.Errorf("%s: generators differ (-Open +OpenTask):\n%s", id, d)
		}
		events := slices.DeleteFunc(slices.Clone(whole.Events), func(e event.Event) bool { return e.Task != id })
		if d := cmp.Diff(events, one.Events); d != "" || len(events) == 0 {
			t.Errorf("%s: %d events; differ (-Open +OpenTask):\n%s", id, len(events), d)
		}
		if len(one.Tasks) != 1 || one.Tasks[0].ID != id {
			t.Errorf("%s: board tasks %v", id, one.Tasks)
		}
	}
}
