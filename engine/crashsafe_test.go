package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/quick"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
)

var errCrash = errors.New("crash")

// crashAfter is a model that plays steps, then fails: the run stops with
// its journal holding those steps.
func crashAfter(steps ...step) model.Model {
	return model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		if req.Caller.Step < len(steps) {
			return steps[req.Caller.Step](req), nil
		}
		return nil, errCrash
	})
}

// answers is a model that answers every request with a final text.
var answers = model.Func(func(context.Context, *model.Request) (*model.Response, error) {
	return &model.Response{Text: "done"}, nil
})

// crashedRun runs p until the model fails and returns its record folder.
func crashedRun(t *testing.T, p *spec.Project, steps ...step) string {
	t.Helper()
	r, err := New(p, Options{Model: crashAfter(steps...), RunsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(context.Background(), "")
	if !errors.Is(err, errCrash) {
		t.Fatalf("first run: %v", err)
	}
	return res.Dir
}

// resume runs the run in dir again. The tests that resume, or take a
// session's next turn, in a folder this process wrote do not run in
// parallel: a program another test starts holds every open file of this
// process between its fork and its exec, the run's lock among them, so
// the lock may still be held just after the run let it go.
func resume(t *testing.T, p *spec.Project, dir string, m model.Model, opts Options) (*Result, []event.Event, error) {
	t.Helper()
	j, err := LoadReplay(dir)
	if err != nil {
		t.Fatal(err)
	}
	rec := &event.Recorder{}
	opts.Model, opts.Resume, opts.Sink = m, j, rec
	r, err := New(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(context.Background(), "")
	return res, rec.Events(), err
}

// jsonLines checks that every line of a JSON-lines file parses.
func jsonLines(t *testing.T, path string) int {
	t.Helper()
	b := readFile(t, path)
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Errorf("%s does not end in a newline", filepath.Base(path))
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		n++
		if !json.Valid(sc.Bytes()) {
			t.Errorf("%s line %d does not parse: %q", filepath.Base(path), n, sc.Bytes())
		}
	}
	return n
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// A crash mid-write leaves a torn line; one between a line and its
// newline leaves a whole line without one. Resume repairs both, in the
// transcripts and in events.jsonl, says so, and every line of the record
// parses after it, even after a second resume.
func TestResumeRepairsTornTails(t *testing.T) {
	p := project(skill("aa", "1.0.0", spec.ChannelHandle))
	dir := crashedRun(t, p, read("aa"))
	appendTo(t, filepath.Join(dir, "journal.jsonl"), `{"seq":9,"kind":"mess`)
	appendTo(t, filepath.Join(dir, "events.jsonl"), `{"type":"text","run":"x","text":"whole but no newline"}`)

	j, err := LoadReplay(dir)
	if err != nil {
		t.Fatalf("a torn journal must load after repair: %v", err)
	}
	want := []string{
		"journal.jsonl: cut a torn last line of 21 bytes",
		"events.jsonl: added the newline the last line lacked",
	}
	if strings.Join(j.Repaired, "\n") != strings.Join(want, "\n") && strings.Join(j.Repaired, "\n") != strings.Join([]string{want[1], want[0]}, "\n") {
		t.Errorf("repaired %q, want %q", j.Repaired, want)
	}
	j.Close()
	// Resume twice: the first fails again, appending after the repair.
	if _, _, err := resume(t, p, dir, crashAfter(read("aa")), Options{}); !errors.Is(err, errCrash) {
		t.Fatal(err)
	}
	if _, _, err := resume(t, p, dir, answers, Options{}); err != nil {
		t.Fatal(err)
	}
	jsonLines(t, filepath.Join(dir, "journal.jsonl"))
	jsonLines(t, filepath.Join(dir, "events.jsonl"))
	if !bytes.Contains(readFile(t, filepath.Join(dir, "events.jsonl")), []byte("whole but no newline\"}\n")) {
		t.Error("the whole last event line was not kept")
	}
}

// One writer per run: while one resume holds the run, a second is
// refused, and so is a resume while the run's recorded process lives.
func TestOneWriterPerRun(t *testing.T) {
	p := project(skill("aa", "1.0.0", spec.ChannelHandle))
	dir := crashedRun(t, p, read("aa"))
	j, err := LoadReplay(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadReplay(dir); !errors.Is(err, ErrInUse) {
		t.Fatalf("second resume: %v, want ErrInUse", err)
	}
	// A fresh run with the same id is refused too: it would write the
	// same folder.
	r, _ := New(p, Options{Model: answers, RunsDir: filepath.Dir(dir), RunID: filepath.Base(dir)})
	if _, err := r.Execute(context.Background(), ""); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Errorf("a second writer of the folder: %v", err)
	}
	j.Close()

	if runtime.GOOS == "windows" {
		return
	}
	// The run's process is alive (a sleep stands in for it).
	live := exec.Command("sleep", "30")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	editSummary(t, dir, func(s map[string]any) { s["status"] = "running"; s["pid"] = live.Process.Pid })
	if _, err := LoadReplay(dir); !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "still running") {
		t.Fatalf("resume of a live run: %v", err)
	}
	j, err = LoadReplay(dir, IgnoreLivePID())
	if err != nil {
		t.Fatalf("with IgnoreLivePID: %v", err)
	}
	j.Close()
}

func editSummary(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	var s map[string]any
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, "run.json")), &s); err != nil {
		t.Fatal(err)
	}
	edit(s)
	b, _ := json.Marshal(s)
	if err := os.WriteFile(filepath.Join(dir, "run.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The record is data: an id in run.json that would lead out of the runs
// folder is not used; the folder's name is the id.
func TestResumeIgnoresRecordedID(t *testing.T) {
	p := project(skill("aa", "1.0.0", spec.ChannelHandle))
	dir := crashedRun(t, p, read("aa"))
	editSummary(t, dir, func(s map[string]any) { s["id"] = "../../../escape" })
	res, _, err := resume(t, p, dir, answers, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Dir != dir || res.RunID != filepath.Base(dir) {
		t.Errorf("resumed into %s as %s, want %s", res.Dir, res.RunID, dir)
	}
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 {
		t.Errorf("the runs folder holds %d entries, want the one run", len(entries))
	}
	if _, err := os.Stat(filepath.Join(dir, "..", "..", "..", "escape")); err == nil {
		t.Error("resume wrote outside the runs folder")
	}
}

// A failed write of the record fails the run: here events.jsonl is
// /dev/full, so every event write gets ENOSPC.
func TestRecordWriteErrorFailsRun(t *testing.T) {
	testpar.UnlessRace(t)
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	runs := t.TempDir()
	dir := filepath.Join(runs, "full")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/full", filepath.Join(dir, "events.jsonl")); err != nil {
		t.Fatal(err)
	}
	p := project(skill("aa", "1.0.0", spec.ChannelHandle))
	_, _, _, err := runWith(t, p, Options{RunsDir: runs, RunID: "full"}, read("aa"), say("fine"))
	if err == nil || !strings.Contains(err.Error(), "events.jsonl") {
		t.Fatalf("err = %v, want a record error naming events.jsonl", err)
	}
	var sum runrecord.Summary
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, "run.json")), &sum); err != nil || sum.Status != runrecord.Failed {
		t.Errorf("run.json %+v (%v), want status failed", sum, err)
	}
}

// A call the journal holds without a result is in doubt. A resume runs it
// again with the same FSD_CALL_ID (on-interrupt: retry, the default), or
// gives the model "outcome unknown" and runs nothing (on-interrupt: fail).
// A call with a result never runs again.
func TestInDoubtCall(t *testing.T) {
	for _, policy := range []spec.OnInterrupt{"", spec.OnInterruptFail} {
		t.Run("on-interrupt="+string(policy), func(t *testing.T) {
			tmp := t.TempDir()
			log := filepath.Join(tmp, "calls.log")
			s := skill("ops", "1.0.0", spec.ChannelHandle)
			s.Tools = append(s.Tools,
				spec.Tool{Name: "effect", Run: spec.ToolRun{Kind: spec.RunCommand, OnInterrupt: policy,
					Command: []string{"sh", "-c", `echo "$FSD_RUN_ID $FSD_CALL_ID" >> "$1"; printf did`, "effect", log}}})
			p := writable(project(s), tmp)
			dir := crashedRun(t, p, read("ops"), call("effect", nil), call("effect", nil))
			// Make the last call in doubt: its result never reached the
			// journal (the crash came while it ran).
			tr := filepath.Join(dir, "journal.jsonl")
			b := readFile(t, tr)
			last := bytes.LastIndexByte(b[:len(b)-1], '\n')
			if !bytes.Contains(b[last:], []byte(`"role":"tool"`)) {
				t.Fatalf("the journal's last line is not a result: %s", b[last:])
			}
			if err := os.WriteFile(tr, b[:last+1], 0o644); err != nil {
				t.Fatal(err)
			}
			var got string
			m := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
				got = lastResult(req).Text
				return &model.Response{Text: "done"}, nil
			})
			_, evs, err := resume(t, p, dir, m, Options{})
			if err != nil {
				t.Fatal(err)
			}
			ran := strings.Fields(strings.TrimSpace(string(readFile(t, log))))
			id := filepath.Base(dir)
			switch policy {
			case spec.OnInterruptFail:
				if got != "outcome unknown: interrupted while running" {
					t.Errorf("the model read %q", got)
				}
				if strings.Join(ran, " ") != id+" host/s2/c1 "+id+" host/s3/c1" {
					t.Errorf("calls %q: the in-doubt call ran again", ran)
				}
			default:
				if got != "did" {
					t.Errorf("the model read %q", got)
				}
				// Step 2's call ran once; step 3's (in doubt) twice, with
				// the same ids.
				if strings.Join(ran, " ") != id+" host/s2/c1 "+id+" host/s3/c1 "+id+" host/s3/c1" {
					t.Errorf("calls %q", ran)
				}
			}
			// Events restating the journal say so; the live ones do not.
			replayed := 0
			for _, e := range evs {
				if e.Replayed {
					replayed++
					if e.Type != event.ToolCall && e.Type != event.ToolResult && e.Type != event.SkillLoaded {
						t.Errorf("a %s event says replayed", e.Type)
					}
				} else if e.Type == event.ToolCall {
					t.Errorf("a journaled call's event is not marked replayed: %+v", e)
				}
			}
			// read_skill's call, skill.loaded and result, step 2's call
			// and result, step 3's call.
			if replayed != 6 {
				t.Errorf("%d replayed events, want 6", replayed)
			}
		})
	}
}

// Task ids map to generator names injectively: a/b and a_b, or A and a,
// never share a transcript.
func TestTaskFileNames(t *testing.T) {
	testpar.UnlessRace(t)
	for id, want := range map[string]string{
		"gather": "gather", "a-b": "a-b", "a/b": "a_2fb", "a_b": "a_5fb", "A": "_41", "..": "_2e_2e", "": "_",
	} {
		if got := runrecord.FileName(id); got != want {
			t.Errorf("runrecord.FileName(%q) = %q, want %q", id, got, want)
		}
	}
	long := strings.Repeat("x", 300)
	if n := runrecord.FileName(long); len(n) > runrecord.MaxNameBytes || n == runrecord.FileName(long+"y") {
		t.Errorf("long ids: %q", n)
	}
	injective := func(a, b string) bool { return a == b || runrecord.FileName(a) != runrecord.FileName(b) }
	if err := quick.Check(injective, &quick.Config{MaxCount: 5000}); err != nil {
		t.Error(err)
	}
	// And in a run: two tasks, two generators in the journal.
	p := project()
	p.Workflow.Host = nil
	p.Workflow.Tasks = []spec.Task{{ID: "a/b", Goal: "one"}, {ID: "a_b", Goal: "two"}}
	res, _, _, err := runWith(t, p, Options{RunsDir: t.TempDir()}, say("x"), say("y"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tasks/a_2fb.jsonl", "tasks/a_5fb.jsonl"} {
		if entries := readTranscript(t, res.Dir, f); len(entries) != 2 {
			t.Errorf("%s: %d entries, want its own task message and answer", f, len(entries))
		}
	}
}

// A run that read non-UTF-8 bytes before it stopped resumes: the replay
// compares the re-executed read with the journal in the form the journal
// stores.
func TestResumeAfterNonUTF8Read(t *testing.T) {
	tmp := t.TempDir()
	if err := os.WriteFile(filepath.Join(tmp, "data.txt"), []byte("ok \xff\xfe end\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := skill("ops", "1.0.0", spec.ChannelHandle)
	s.Dir, s.Resources = tmp, []string{"data.txt"}
	p := project(s)
	cat := func(req *model.Request) *model.Response {
		var handle string
		for _, m := range req.Messages {
			var rc struct{ ID, Handle string }
			if m.Role == model.Tool && json.Unmarshal([]byte(m.Text), &rc) == nil && rc.ID == "ops" {
				handle = rc.Handle
			}
		}
		args, _ := json.Marshal(map[string]string{"get": "cat", "handle": handle, "path": "data.txt"})
		return &model.Response{Calls: []model.ToolCall{{ID: "cat", Name: "artifact_read", Args: args}}}
	}
	dir := crashedRun(t, p, read("ops"), cat)
	if !bytes.Contains(readFile(t, filepath.Join(dir, "journal.jsonl")), []byte("ok \uFFFD\uFFFD end")) {
		t.Fatalf("the journal does not hold the read: %s", readFile(t, filepath.Join(dir, "journal.jsonl")))
	}
	if _, _, err := resume(t, p, dir, answers, Options{}); err != nil {
		t.Fatalf("resume after a non-UTF-8 read: %v", err)
	}
}

// A resumed pipeline restates the tasks its journal holds: their task.*
// events say "replayed"; the work done live does not.
func TestResumedTaskEventsSayReplayed(t *testing.T) {
	p := project()
	p.Workflow.Host = nil
	p.Workflow.Tasks = []spec.Task{{ID: "a", Goal: "one"}, {ID: "b", Goal: "two", Deps: []string{"a"}}}
	first := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		if req.Caller.TaskID == "b" {
			return nil, errCrash
		}
		return &model.Response{Text: "a done"}, nil
	})
	r, _ := New(p, Options{Model: first, RunsDir: t.TempDir()})
	res, err := r.Execute(context.Background(), "")
	if err == nil {
		t.Fatal("the first run did not fail")
	}
	_, evs, err := resume(t, p, res.Dir, answers, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, e := range evs {
		if strings.HasPrefix(e.Type, "task.") {
			got[e.Type+" "+e.Task] = e.Replayed
		}
	}
	want := map[string]bool{
		"task.added a": true, "task.added b": true,
		"task.started a": true, "task.completed a": true,
		"task.started b":   true, // it started before the crash
		"task.completed b": false,
	}
	for k, v := range want {
		if r, ok := got[k]; !ok || r != v {
			t.Errorf("%s: replayed=%v (seen %v), want %v", k, r, ok, v)
		}
	}
}

// Long text is clipped in run.json, board.json and text events, as tool
// results are in events; the transcripts keep it whole.
func TestLongTextIsClippedInTheRecord(t *testing.T) {
	testpar.UnlessRace(t)
	long := strings.Repeat("word ", 40<<10) // 200 KiB
	p := project()
	p.Workflow.Host = nil
	p.Workflow.Tasks = []spec.Task{{ID: "a", Goal: "write a lot"}}
	m := model.Func(func(context.Context, *model.Request) (*model.Response, error) {
		return &model.Response{Text: long}, nil
	})
	rec := &event.Recorder{}
	r, _ := New(p, Options{Model: m, RunsDir: t.TempDir(), Sink: rec})
	res, err := r.Execute(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != long {
		t.Fatal("the answer itself is clipped")
	}
	for _, f := range []string{"run.json", "board.json"} {
		b := readFile(t, filepath.Join(res.Dir, f))
		if len(b) > maxRecordText+4<<10 || !bytes.Contains(b, []byte("bytes in all; the transcript has the whole text")) {
			t.Errorf("%s is %d bytes, not clipped", f, len(b))
		}
	}
	for _, e := range rec.Events() {
		if e.Type == event.Text && len(e.Text) > maxRecordText+200 {
			t.Errorf("a text event of %d bytes", len(e.Text))
		}
	}
	if entries := readTranscript(t, res.Dir, "tasks/a.jsonl"); entries[len(entries)-1].Message.Text != long {
		t.Errorf("the journal does not keep the whole answer")
	}
}
