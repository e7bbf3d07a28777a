package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
)

var handleRe = regexp.MustCompile(`h_[0-9a-f]{32}`)

// keyedRun runs p with the project key key and returns the handles its
// requests named, in order, and the run's record folder.
func keyedRun(t *testing.T, p *spec.Project, key []byte, runs string, steps ...step) ([]string, string) {
	t.Helper()
	m := &recModel{steps: steps}
	r, err := New(p, Options{Model: m, RunsDir: runs, HandleKey: key})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var hs []string
	for _, req := range m.requests() {
		b, _ := json.Marshal(req)
		hs = append(hs, handleRe.FindAllString(string(b), -1)...)
	}
	return hs, res.Dir
}

// K1: with the project's handle key, two runs of a workflow give its
// skills the same handles (their requests are the same bytes), another
// project's key gives others, and run.json names the key by an id, never
// the key itself, with no seed.
func TestHandlesStableAcrossRuns(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(skill("aa", "1.0.0", spec.ChannelHandle))
	key := bytes.Repeat([]byte{7}, 32)
	runs := t.TempDir()
	first, dir := keyedRun(t, p, key, runs, read("aa"), say("done"))
	second, _ := keyedRun(t, p, key, runs, read("aa"), say("done"))
	other, _ := keyedRun(t, p, bytes.Repeat([]byte{8}, 32), runs, read("aa"), say("done"))
	if len(first) == 0 {
		t.Fatal("the handle skill's load named no handle")
	}
	if strings.Join(first, " ") != strings.Join(second, " ") {
		t.Errorf("two runs with one key: handles %v and %v", first, second)
	}
	if first[0] == other[0] {
		t.Errorf("another project's key gave the same handle %s", first[0])
	}
	sum, err := runrecord.ReadSummary(dir)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Seed != "" || sum.HandleKey != handleKeyID(key) {
		t.Errorf("run.json: seed %q, handle_key %q; want no seed and %q", sum.Seed, sum.HandleKey, handleKeyID(key))
	}
	raw, _ := os.ReadFile(filepath.Join(dir, runrecord.RunFile))
	if bytes.Contains(raw, key) || strings.Contains(string(raw), "0707070707") {
		t.Error("run.json holds the handle key")
	}
}

// A run with keyed handles resumes only with the key it started with; a
// record with a seed resumes with its seed whatever key is given.
func TestResumeKeyedHandles(t *testing.T) {
	p := project(skill("aa", "1.0.0", spec.ChannelHandle))
	key := bytes.Repeat([]byte{7}, 32)
	down := errors.New("503 service unavailable")
	var handles []string
	failing := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		handles = append(handles, handleRe.FindAllString(req.Context, -1)...)
		if req.Caller.Step == 0 {
			return read("aa")(req), nil
		}
		return nil, down
	})
	for _, seeded := range []bool{false, true} {
		handles = nil
		opts := Options{Model: failing, RunsDir: t.TempDir(), HandleKey: key}
		if seeded {
			opts.Seed = &[32]byte{3}
		}
		r, err := New(p, opts)
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Execute(context.Background(), "")
		if !errors.Is(err, down) || len(handles) == 0 {
			t.Fatalf("first run: %v, handles %v", err, handles)
		}
		want := handles[0]
		for _, k := range [][]byte{nil, bytes.Repeat([]byte{8}, 32)} {
			j, err := LoadReplay(res.Dir)
			if err != nil {
				t.Fatal(err)
			}
			_, err = New(p, Options{Model: failing, Resume: j, HandleKey: k})
			j.Close()
			if seeded && err != nil {
				t.Errorf("a seeded run resumed with key %x: %v", k, err)
			}
			if !seeded && !errors.Is(err, ErrNotResumable) {
				t.Errorf("a keyed run resumed with key %x: %v, want ErrNotResumable", k, err)
			}
		}
		j, err := LoadReplay(res.Dir)
		if err != nil {
			t.Fatal(err)
		}
		handles = nil
		r2, err := New(p, Options{Model: failing, Resume: j, HandleKey: key})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r2.Execute(context.Background(), ""); !errors.Is(err, down) {
			t.Fatalf("resume: %v", err)
		}
		if len(handles) == 0 || handles[0] != want {
			t.Errorf("seeded %v: the resume named handles %v, want %s as the first run", seeded, handles, want)
		}
	}
}

// K2, K4: a task sent to a worker elsewhere carries the key the run
// derives handles with (derived from the project's, never the project's
// own) and the run's cache scope, through the wire's JSON: the worker
// gives its artifacts the handles the run would and its requests the
// cache key of the workflow and agent.
func TestRemoteAttemptCarriesHandleKeyAndCacheScope(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(team())
	p.Workflow.Host = nil
	p.Workflow.Tasks = []spec.Task{{ID: "t1", Goal: "g", Assignee: "team/iso"}}
	key := bytes.Repeat([]byte{7}, 32)
	d := &fakeDispatcher{}
	r, err := New(p, Options{Model: &recModel{}, Dispatcher: d, HandleKey: key})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Execute(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	at := d.tasks["t1"]
	b, err := json.Marshal(at)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		HandleKey  []byte `json:"handle-key"`
		CacheScope string `json:"cache-scope"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.HandleKey, artifactKey(key)) || bytes.Equal(got.HandleKey, key) {
		t.Errorf("the attempt's handle key is %x, want the run's derived key %x", got.HandleKey, artifactKey(key))
	}
	if want := "fsd/" + p.Workflow.Name; got.CacheScope != want {
		t.Errorf("the attempt's cache scope is %q, want %q", got.CacheScope, want)
	}
}
