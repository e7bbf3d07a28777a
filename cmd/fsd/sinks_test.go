package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/syncbuf"
)

// Progress lines are buffered, but every line comes out, in order: at the
// end (flush), and without it shortly after it was emitted.
func TestProgressSinkBuffers(t *testing.T) {
	var out syncbuf.Buffer
	s := newProgressSink(&out)
	var want []string
	for _, id := range []string{"a", "b", "c"} {
		s.Emit(event.Event{Type: event.TaskStarted, Task: id})
		s.Emit(event.Event{Type: event.Text, Text: "not a progress line"})
		want = append(want, "task "+id+" started")
	}
	s.flush()
	if got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("progress lines %q, want %q", got, want)
	}
	// Without a flush, the timer writes the line.
	s.Emit(event.Event{Type: event.TaskCompleted, Task: "d"})
	for i := 0; i < 1000 && !strings.Contains(out.String(), "task d completed"); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(out.String(), "task d completed") {
		t.Fatal("a buffered progress line was never written")
	}
}

// A failed task is one progress line, whatever its error spans (a typed
// task's violations are a list): a reader of stderr sees one line a task.
func TestProgressLineOfMultiLineFailure(t *testing.T) {
	got := progressLine(event.Event{Type: event.TaskFailed, Task: "t1", Agent: "stats/collector",
		Err: "answer does not match the output schema (after 2 repair turns):\n- at /total: got string, want integer\n- at /items/0: got number, want string"})
	want := "task t1 (stats/collector) failed: answer does not match the output schema (after 2 repair turns): - at /total: got string, want integer; - at /items/0: got number, want string"
	if got != want {
		t.Errorf("progress line\n%q\nwant\n%q", got, want)
	}
}

// A task's state lines, written straight into the buffer, read as
// progressLine says them.
func TestProgressSinkTaskLines(t *testing.T) {
	for _, e := range []event.Event{
		{Type: event.TaskAdded, Task: "t1", Agent: "fan/worker"},
		{Type: event.TaskStarted, Task: "t2"},
		{Type: event.TaskCompleted, Task: "join", Agent: "fan/joiner"},
	} {
		var out syncbuf.Buffer
		s := newProgressSink(&out)
		s.Emit(e)
		s.flush()
		if want := progressLine(e) + "\n"; out.String() != want || !strings.HasPrefix(want, "task "+e.Task) {
			t.Errorf("%s: wrote %q, progressLine says %q", e.Type, out.String(), want)
		}
	}
}

// Every event progressLine has a line for passes hasLine's early filter:
// each event type the event package declares, read from its source so a
// type added later is checked too, with and without a task and an error.
func TestHasLineLetsEveryLineThrough(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../../event/event.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			for _, v := range s.(*ast.ValueSpec).Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					typ, _ := strconv.Unquote(lit.Value)
					types = append(types, typ)
				}
			}
		}
	}
	if len(types) < 20 {
		t.Fatalf("read %d event types from event/event.go: %q", len(types), types)
	}
	for _, typ := range types {
		for _, task := range []string{"", "t1"} {
			for _, failed := range []bool{false, true} {
				e := event.Event{Type: typ, Task: task, Agent: "a/b", Error: failed, Skill: "s", Tool: "x", Status: "ok", Err: "e", Result: "r"}
				if line := progressLine(e); line != "" && !hasLine(&e) {
					t.Errorf("%s (task %q, error %v): progressLine says %q but hasLine filters it out", typ, task, failed, line)
				}
			}
		}
	}
}
