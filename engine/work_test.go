package engine

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/work"
)

// memLog is a journal.Log in memory, as a worker's JetStream journal is
// to Work: the entries as appended, and how often a step waited.
type memLog struct {
	mu      sync.Mutex
	entries []json.RawMessage
	waits   int
	fail    error // Wait's answer when set
}

func (l *memLog) Append(_ journal.Gen, entry []byte) (journal.Mark, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, json.RawMessage(strings.TrimSuffix(string(entry), "\n")))
	return journal.Mark(len(l.entries)), nil
}

func (l *memLog) Wait(journal.Mark) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waits++
	return l.fail
}

// effectTask is a worker task whose agent calls the command tool effect
// twice (it logs "CALL_ID n" to log), then answers.
func effectTask(log string, policy spec.OnInterrupt) (*work.Attempt, *spec.Skill) {
	s := approvalSkill(log, spec.ApproveNever)
	s.Tools[len(s.Tools)-1].Run.OnInterrupt = policy
	s.Agents = []spec.Agent{{Name: "runner", Prompt: "Run it.", Tools: []string{"effect"}, Visibility: spec.VisibilitySub}}
	// The log's folder is the attempt's workspace: a worker has no
	// workflow to grant its sandbox a folder.
	return &work.Attempt{Run: "r1", Task: "deploy", Number: 1, Goal: "ship", Skill: "ops", Agent: "runner",
		Assignee: "ops/runner", Limits: work.Limits{MaxSteps: 5, MaxTranscriptMessages: 60}, Workspace: filepath.Dir(log)}, s
}

// effectModel calls effect with n=1, then n=2, then answers with what it
// read; asked counts its calls.
func effectModel(asked *int) model.Model {
	return model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		*asked++
		switch n := len(req.Messages); {
		case n < 2:
			return &model.Response{Calls: []model.ToolCall{{ID: "a", Name: "effect", Args: json.RawMessage(`{"n":1}`)}}}, nil
		case n < 4:
			return &model.Response{Calls: []model.ToolCall{{ID: "b", Name: "effect", Args: json.RawMessage(`{"n":2}`)}}}, nil
		}
		return &model.Response{Text: "read " + lastResult(req).Text}, nil
	})
}

// A worker's Work resumes a task from the entries an earlier delivery
// journaled exactly as a local resume does: the journaled model responses
// are not asked for again, a command with a journaled result does not run
// again, an in-doubt one follows its on-interrupt with the same
// FSD_CALL_ID, events restating the journal say "replayed", and the new
// entries are appended after the journaled ones.
func TestWorkResumesFromJournal(t *testing.T) {
	testpar.UnlessRace(t)
	for _, policy := range []spec.OnInterrupt{"", spec.OnInterruptFail} {
		t.Run("on-interrupt="+string(policy), func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "calls.log")
			task, s := effectTask(log, policy)
			first := &memLog{}
			asked := 0
			res := Work(context.Background(), task, work.Options{Model: effectModel(&asked), Skill: s, Log: first})
			if res.Error != "" || res.Result != "read did 2" || asked != 3 {
				t.Fatalf("first delivery: %+v, model asked %d times", res, asked)
			}
			// The worker died while step 2's call ran: the journal held the
			// task message, step 1 with its result and step 2's call.
			if len(first.entries) != 6 {
				t.Fatalf("%d entries journaled, want 6", len(first.entries))
			}
			journaled := first.entries[:4]
			second := &memLog{}
			rec := &event.Recorder{}
			asked = 0
			res = Work(context.Background(), task, work.Options{Model: effectModel(&asked), Skill: s, Sink: rec,
				Log: second, Logged: journaled})
			if res.Error != "" {
				t.Fatal(res.Error)
			}
			if asked != 1 {
				t.Errorf("the model was asked %d times on resume, want 1 (the step the journal lacks)", asked)
			}
			ran := strings.Join(ranLines(t, log), "|")
			switch policy {
			case spec.OnInterruptFail:
				if ran != "task:deploy/s1/c1 1|task:deploy/s2/c1 2" || res.Result != "read "+journal.OutcomeUnknown {
					t.Errorf("ran %q, answer %q: the in-doubt call must not run again", ran, res.Result)
				}
			default:
				if ran != "task:deploy/s1/c1 1|task:deploy/s2/c1 2|task:deploy/s2/c1 2" || res.Result != "read did 2" {
					t.Errorf("ran %q, answer %q: want step 2's call again with its FSD_CALL_ID", ran, res.Result)
				}
			}
			var seq struct{ Seq int }
			if len(second.entries) == 0 || json.Unmarshal(second.entries[0], &seq) != nil || seq.Seq != len(journaled) {
				t.Errorf("the resumed delivery's entries start at %s, want seq %d", second.entries, len(journaled))
			}
			replayed := 0
			for _, e := range rec.Events() {
				if e.Replayed {
					replayed++
					if e.Type != event.ToolCall && e.Type != event.ToolResult {
						t.Errorf("a %s event says replayed", e.Type)
					}
				} else if e.Type == event.ToolCall && strings.Contains(string(e.Args), `"n":1`) {
					t.Errorf("the journaled call's event is not marked replayed: %+v", e)
				}
			}
			// Step 1's call and result, step 2's call.
			if replayed != 3 {
				t.Errorf("%d replayed events, want 3", replayed)
			}
		})
	}
}

// Work waits for its journal as the task's durability says, and a
// journal that fails fails the task: no step counts as journaled when it
// is not.
func TestWorkJournalDurability(t *testing.T) {
	testpar.UnlessRace(t)
	waits := map[spec.Durability]int{}
	for _, d := range []spec.Durability{"", spec.DurabilityEffects} {
		log := filepath.Join(t.TempDir(), "calls.log")
		task, s := effectTask(log, "")
		task.Durability = d
		l := &memLog{}
		asked := 0
		if res := Work(context.Background(), task, work.Options{Model: effectModel(&asked), Skill: s, Log: l}); res.Error != "" {
			t.Fatal(res.Error)
		}
		waits[d] = l.waits
	}
	// Before each command, and (step) at each step's end.
	if waits[spec.DurabilityEffects] != 2 || waits[""] != 5 {
		t.Errorf("waits by durability %v, want step 5, commit-before-effects 2", waits)
	}

	log := filepath.Join(t.TempDir(), "calls.log")
	task, s := effectTask(log, "")
	asked := 0
	res := Work(context.Background(), task, work.Options{Model: effectModel(&asked), Skill: s,
		Log: &memLog{fail: errors.New("stream gone")}})
	if !strings.Contains(res.Error, "stream gone") {
		t.Errorf("task with a failing journal: %+v", res)
	}
	if got := ranLines(t, log); got != nil {
		t.Errorf("a command ran though its call was not journaled: %q", got)
	}
	task.Durability = "sometimes"
	if res := Work(context.Background(), task, work.Options{Model: effectModel(&asked), Skill: s}); !strings.Contains(res.Error, "durability") {
		t.Errorf("bad durability: %+v", res)
	}
}

// TestWorkFinalInOutcome: when the caller commits the outcome with the
// transcript (a NATS worker), the final answer does not wait for the log;
// every step before it and every effect still does.
func TestWorkFinalInOutcome(t *testing.T) {
	waits := map[spec.Durability]int{}
	for _, d := range []spec.Durability{"", spec.DurabilityEffects} {
		task, s := effectTask(filepath.Join(t.TempDir(), "calls.log"), "")
		task.Durability = d
		l := &memLog{}
		asked := 0
		if res := Work(context.Background(), task, work.Options{Model: effectModel(&asked), Skill: s, Log: l, FinalInOutcome: true}); res.Error != "" {
			t.Fatal(res.Error)
		}
		waits[d] = l.waits
	}
	if waits[spec.DurabilityEffects] != 2 || waits[""] != 4 {
		t.Errorf("waits by durability %v, want step 4 (the final answer's left to the outcome), commit-before-effects 2", waits)
	}
}
