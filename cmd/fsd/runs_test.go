package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/runrecord"
)

// fakeRun writes a run record that started age ago.
func fakeRun(t *testing.T, runs, id string, status runrecord.Status, pid int, age time.Duration, answer string) string {
	t.Helper()
	dir := filepath.Join(runs, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	started := time.Now().Add(-age)
	s := runrecord.Summary{ID: id, Workflow: "wf.workflow.yaml", Status: status, PID: pid, Started: started,
		Input: "go", Answer: answer, InputTokens: 100, OutputTokens: 20}
	if status != runrecord.Running {
		s.Finished = started.Add(1500 * time.Millisecond)
	}
	b, _ := json.Marshal(s)
	if err := os.WriteFile(filepath.Join(dir, "run.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRunsListJSONAndLimit(t *testing.T) {
	runs := t.TempDir()
	fakeRun(t, runs, "20261101-100000-aaaa1111", "finished", 0, 30*24*time.Hour, "old")
	fakeRun(t, runs, "20261120-100000-bbbb2222", "failed", 0, 10*24*time.Hour, "")
	fakeRun(t, runs, "20261130-100000-cccc3333", "running", 999999999, time.Hour, "") // process gone
	if err := os.Mkdir(filepath.Join(runs, "not-a-run"), 0o755); err != nil {
		t.Fatal(err)
	}

	code, out, errs := fsd(t, "runs", "--runs-dir", runs, "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rows []runRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.ID+" "+string(r.Status))
	}
	want := "20261130-100000-cccc3333 interrupted,20261120-100000-bbbb2222 failed,20261101-100000-aaaa1111 finished"
	if strings.Join(got, ",") != want {
		t.Errorf("runs --json: %v, want %s", got, want)
	}
	if rows[2].Duration != 1.5 || rows[2].Dir != filepath.Join(runs, "20261101-100000-aaaa1111") {
		t.Errorf("row %+v", rows[2])
	}

	code, out, errs = fsd(t, "runs", "--runs-dir", runs, "--limit", "1")
	if code != exitOK || strings.Count(out, "\n") != 2 || !strings.Contains(out, "cccc3333  interrupted") || errs != "2 older runs not shown; --limit 0 lists all\n" {
		t.Errorf("--limit 1: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ := fsd(t, "runs", "--runs-dir", runs, "--limit", "0"); code != exitOK || strings.Count(out, "\n") != 4 {
		t.Errorf("--limit 0:\n%s", out)
	}
	if code, _, errs := fsd(t, "runs", "--runs-dir", runs, "--limit", "-1"); code != exitUsage || !strings.HasPrefix(errs, "fsd: --limit -1 is negative") {
		t.Errorf("--limit -1: exit %d %s", code, errs)
	}
	empty := filepath.Join(t.TempDir(), "none")
	if code, out, _ := fsd(t, "runs", "--runs-dir", empty, "--format", "json"); code != exitOK || out != "[]\n" {
		t.Errorf("no runs as JSON: %q", out)
	}
}

// fsd show RUN summarises a run, found by its id, its tail or its folder.
func TestShowSummary(t *testing.T) {
	runs := t.TempDir()
	// A real run, so the board's tasks are in the record.
	code, _, errs := fsd(t, "run", "../../examples/hello/hello.workflow.yaml", "--runs-dir", runs)
	if code != exitOK {
		t.Fatal(errs)
	}
	dirs, _ := os.ReadDir(runs)
	id := dirs[0].Name()
	tail := id[strings.LastIndex(id, "-")+1:]

	for _, arg := range []string{id, tail, filepath.Join(runs, id)} {
		code, out, errs := fsd(t, "show", arg, "--runs-dir", runs)
		if code != exitOK {
			t.Fatalf("show %s: exit %d: %s", arg, code, errs)
		}
		for _, want := range []string{"run       " + id + "\n", "status    finished\n", "tokens    ", "\ntasks (1)\n  note  completed  greeter/writer  ", "\nanswer\n  Ada is welcomed; the writer's note is on the board.\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("show %s lacks %q:\n%s", arg, want, out)
			}
		}
	}
	code, out, _ := fsd(t, "show", tail, "--runs-dir", runs, "--format", "json")
	var d runDetail
	if err := json.Unmarshal([]byte(out), &d); code != exitOK || err != nil {
		t.Fatalf("show --json: %v\n%s", err, out)
	}
	if d.ID != id || d.Status != runrecord.Finished || len(d.Tasks) != 1 || d.Tasks[0].ID != "note" || d.Answer == "" || d.InputTokens == 0 {
		t.Errorf("show --json: %+v", d)
	}

	// A failed run says how to resume it, with --runs-dir where it needs it.
	fakeRun(t, runs, "20261120-100000-bbbb2222", "failed", 0, time.Hour, "")
	_, out, _ = fsd(t, "show", "bbbb2222", "--runs-dir", runs)
	if !strings.HasSuffix(out, "\nresume it with: fsd resume "+filepath.Join(runs, "20261120-100000-bbbb2222")+"\n") {
		t.Errorf("no resume hint:\n%s", out)
	}
}

// An unknown run id is a usage error that says where fsd looked and how to
// list what is there, for every command that takes a RUN.
func TestUnknownRunID(t *testing.T) {
	runs := t.TempDir()
	fakeRun(t, runs, "20261120-100000-bbbb2222", "failed", 0, time.Hour, "")
	fakeRun(t, runs, "20261120-100001-bbbb3333", "failed", 0, time.Hour, "")
	for _, args := range [][]string{{"show"}, {"runs", "show"}, {"resume"}} {
		code, out, errs := fsd(t, append(args, "nosuchrun", "--runs-dir", runs)...)
		want := "fsd: no run nosuchrun in " + runs + "; fsd runs --runs-dir " + runs + " lists them\n"
		if code != exitUsage || out != "" || errs != want {
			t.Errorf("%v: exit %d\nstderr %q\nwant   %q", args, code, errs, want)
		}
		code, _, errs = fsd(t, append(args, "20261120", "--runs-dir", runs)...)
		if code != exitUsage || !strings.Contains(errs, `"20261120" matches 2 runs in `) {
			t.Errorf("%v ambiguous: exit %d %q", args, code, errs)
		}
	}
	// With the default runs folder the hint is the plain command.
	t.Chdir(t.TempDir())
	if _, _, errs := fsd(t, "resume", "nosuchrun"); errs != "fsd: no run nosuchrun in .fsd/runs; fsd runs lists them\n" {
		t.Errorf("default runs dir: %q", errs)
	}
}

func TestRunsPrune(t *testing.T) {
	runs := t.TempDir()
	day := 24 * time.Hour
	oldDone := fakeRun(t, runs, "20261101-100000-aaaa0001", "finished", 0, 30*day, "x")
	oldFailed := fakeRun(t, runs, "20261102-100000-aaaa0002", "failed", 0, 20*day, "")
	oldDead := fakeRun(t, runs, "20261103-100000-aaaa0003", "running", 999999999, 20*day, "") // interrupted
	oldLive := fakeRun(t, runs, "20261104-100000-aaaa0004", "running", os.Getpid(), 20*day, "")
	oldHeld := fakeRun(t, runs, "20261105-100000-aaaa0005", "interrupted", 0, 20*day, "") // being resumed
	young := fakeRun(t, runs, "20261129-100000-aaaa0006", "finished", 0, day, "x")
	// Killed before it wrote run.json: nothing to resume, removed too.
	noRecord := filepath.Join(runs, "20261001-100000-aaaa0007")
	if err := os.Mkdir(noRecord, 0o755); err != nil {
		t.Fatal(err)
	}
	// A live run, and a resume in progress, hold their folders.
	for _, dir := range []string{oldLive, oldHeld} {
		lock, err := journal.Lock(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Unlock()
	}

	code, out, errs := fsd(t, "runs", "prune", "--older-than", "7d", "--runs-dir", runs, "--dry-run")
	if code != exitOK || !strings.HasSuffix(out, "would remove 4 runs, kept 1, skipped 2 still running\n") {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(oldDone); err != nil {
		t.Fatal("--dry-run removed a run")
	}

	code, out, errs = fsd(t, "runs", "prune", "--older-than", "7d", "--runs-dir", runs)
	if code != exitOK || !strings.HasSuffix(out, "removed 4 runs, kept 1, skipped 2 still running\n") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, gone := range []string{oldDone, oldFailed, oldDead, noRecord} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("%s is still there", filepath.Base(gone))
		}
	}
	for _, kept := range []string{oldLive, oldHeld, young} {
		if _, err := os.Stat(kept); err != nil {
			t.Errorf("%s was removed", filepath.Base(kept))
		}
	}

	for _, tt := range []struct{ args, want string }{
		{"", "fsd: give --older-than AGE, e.g. --older-than 7d\n"},
		{"--older-than 7", "fsd: --older-than \"7\": want a number of days (7d) or weeks (2w), or a duration like 36h\n"},
		{"--older-than 0d", "fsd: --older-than \"0d\": the age must be more than zero\n"},
		{"--older-than -3h", "fsd: --older-than \"-3h\": the age must be more than zero\n"},
	} {
		args := append([]string{"runs", "prune", "--runs-dir", runs}, strings.Fields(tt.args)...)
		if code, _, errs := fsd(t, args...); code != exitUsage || errs != tt.want {
			t.Errorf("%s: exit %d %q, want %q", tt.args, code, errs, tt.want)
		}
	}
}

func TestParseAge(t *testing.T) {
	for in, want := range map[string]time.Duration{"7d": 7 * 24 * time.Hour, "2w": 14 * 24 * time.Hour, "1.5d": 36 * time.Hour, "36h": 36 * time.Hour, "90m": 90 * time.Minute} {
		if got, err := parseAge(in); err != nil || got != want {
			t.Errorf("parseAge(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"d", "7x", "seven days", "0", "-1d"} {
		if _, err := parseAge(in); err == nil {
			t.Errorf("parseAge(%q) accepted", in)
		}
	}
}

func TestCompletions(t *testing.T) {
	runs := t.TempDir()
	fakeRun(t, runs, "20261120-100000-bbbb2222", "failed", 0, 2*time.Hour, "")
	fakeRun(t, runs, "20261121-100000-cccc3333", "finished", 0, time.Hour, "x")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"runs", "show", "--runs-dir", runs, ""}, "20261121-100000-cccc3333\tfinished wf.workflow.yaml\n20261120-100000-bbbb2222\tfailed wf.workflow.yaml\n"},
		{[]string{"resume", "--runs-dir", runs, ""}, "20261121-100000-cccc3333\tfinished wf.workflow.yaml\n20261120-100000-bbbb2222\tfailed wf.workflow.yaml\n"},
		{[]string{"schema", ""}, "skill\nworkflow\nskill-md\nscript\neval\n"},
		{[]string{"validate", "--format", ""}, "text\njson\ngithub\nsarif\n"},
		{[]string{"graph", "--format", ""}, "mermaid\ndot\n"},
		{[]string{"run", "x.yaml", "--events", ""}, "json\n"},
		{[]string{"run", "x.yaml", "--model", ""}, "scripted\tthe workflow's script, offline\n" +
			"openai/\tOPENAI_API_KEY; OPENAI_BASE_URL for another server\n" +
			"openai-responses/\tOPENAI_API_KEY; OPENAI_BASE_URL for another server\n" +
			"anthropic/\tANTHROPIC_API_KEY; ANTHROPIC_BASE_URL for another server\n" +
			"gemini/\tGEMINI_API_KEY (or GOOGLE_API_KEY); GEMINI_BASE_URL for another server\n"},
		{[]string{"init", "--template", ""}, "hello\npipeline\nagent-skills\n"},
		{[]string{"version", "--color", ""}, "auto\nalways\nnever\n"},
	}
	for _, tt := range tests {
		code, out, errs := fsd(t, append([]string{"__complete"}, tt.args...)...)
		values, _, _ := strings.Cut(out, ":")
		if code != exitOK || values != tt.want {
			t.Errorf("complete %v: exit %d %s\n got %q\nwant %q", tt.args, code, errs, values, tt.want)
		}
	}
}

// Every command's help shows an example of its use.
func TestEveryCommandHasAnExample(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Name() == "help" || sub.Name() == "completion" || sub.Hidden {
				continue
			}
			if strings.TrimSpace(sub.Example) == "" {
				t.Errorf("%s has no Example", sub.CommandPath())
			}
			walk(sub)
		}
	}
	root := newRootCmd(&strings.Builder{}, &strings.Builder{})
	if root.Example == "" {
		t.Error("fsd has no Example")
	}
	walk(root)
}

// A damaged run.json is not hidden: fsd runs lists the other runs and says,
// on stderr, which record it skipped and why.
func TestRunsSaysWhichRecordIsDamaged(t *testing.T) {
	runs := t.TempDir()
	fakeRun(t, runs, "20261120-100000-bbbb2222", "finished", 0, time.Hour, "fine")
	bad := filepath.Join(runs, "20261130-100000-cccc3333")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "run.json"), []byte(`{"id": "20261130-100000-cccc3333", "status": "runn`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := fsd(t, "runs", "--runs-dir", runs)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "20261120-100000-bbbb2222") || strings.Contains(out, "cccc3333") {
		t.Errorf("listing:\n%s", out)
	}
	want := "fsd: runs: skipped a damaged record: " + filepath.Join(bad, "run.json") + ": "
	if !strings.HasPrefix(errs, want) || strings.Count(errs, "\n") != 1 {
		t.Errorf("stderr %q, want one line starting %q", errs, want)
	}
}

// TestRunsLivenessFromLock: whether a run is live is told by its
// folder's lock, not by run.json's status or process id: a run.json that
// says running, with a live process id but nobody holding the folder
// (killed, the id reused), is interrupted in fsd runs and fsd show; one
// whose folder is held is running; and a run killed before it wrote
// run.json is listed (incomplete) and pruned.
func TestRunsLivenessFromLock(t *testing.T) {
	runs := t.TempDir()
	killed := fakeRun(t, runs, "20261110-100000-dead0001", "running", os.Getpid(), 20*24*time.Hour, "")
	live := fakeRun(t, runs, "20261111-100000-live0002", "waiting", os.Getpid(), 20*24*time.Hour, "")
	lock, err := journal.Lock(live)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	early := filepath.Join(runs, "20261001-100000-none0003")
	if err := os.Mkdir(early, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(early, runrecord.ResolvedFile), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	code, out, errs := fsd(t, "runs", "--runs-dir", runs, "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rows []runRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.ID+" "+string(r.Status))
	}
	want := "20261111-100000-live0002 waiting,20261110-100000-dead0001 interrupted,20261001-100000-none0003 incomplete"
	if strings.Join(got, ",") != want {
		t.Errorf("fsd runs: %v, want %s", got, want)
	}
	if code, out, _ := fsd(t, "show", filepath.Base(killed), "--runs-dir", runs); code != exitOK || !strings.Contains(out, "status    interrupted") {
		t.Errorf("fsd show of the killed run:\n%s", out)
	}
	code, out, errs = fsd(t, "runs", "prune", "--older-than", "7d", "--runs-dir", runs)
	if code != exitOK || !strings.Contains(out, "removed 2 runs") {
		t.Errorf("prune: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(early); !os.IsNotExist(err) {
		t.Errorf("the run killed before run.json was not pruned (%v)", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live run was pruned (%v)", err)
	}
}

// A run started from another folder keeps its record in the workflow's
// project, where `fsd runs` run in that project finds it.
func TestRunRecordGoesUnderTheProject(t *testing.T) {
	proj := t.TempDir()
	if err := os.MkdirAll(filepath.Join(proj, ".fsd"), 0o755); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(proj, "flows")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	wf := filepath.Join(sub, "hello.workflow.yaml")
	if err := os.WriteFile(wf, []byte("name: hello\nmodel: scripted\nscript: hello.script.yaml\nskills: []\nhost:\n  prompt: Say hi.\ninput: hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "hello.script.yaml"), []byte("host:\n  - say: hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	t.Chdir(elsewhere)
	if code, out, errs := fsd(t, "run", wf); code != exitOK {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, ".fsd")); err == nil {
		t.Error("the record went where fsd was started, not under the project")
	}
	t.Chdir(sub)
	code, out, errs := fsd(t, "runs")
	if code != exitOK || !strings.Contains(out, "hello") {
		t.Errorf("fsd runs in the project: exit %d\n%s%s", code, out, errs)
	}
	entries, err := os.ReadDir(filepath.Join(proj, ".fsd", "runs"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("runs under the project's .fsd: %v %v", entries, err)
	}
	// fsd report RUN, without -o, writes RUN-ID.html here.
	id := entries[0].Name()
	code, _, errs = fsd(t, "report", id[len(id)-8:])
	if code != exitOK || errs != "fsd report: wrote "+id+".html\n" {
		t.Errorf("report: exit %d %q", code, errs)
	}
	if page, err := os.ReadFile(filepath.Join(sub, id+".html")); err != nil || !strings.Contains(string(page), "<html") {
		t.Errorf("report page: %v", err)
	}
}
