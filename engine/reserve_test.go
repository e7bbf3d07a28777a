package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/work"
)

// A call whose request alone would pass what is left of an input budget
// is not made: the model is never asked, and the error says what the call
// needed. Used tokens alone would have let it in (none are used).
func TestReservationRefusesACallThatWouldCross(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(skill("aa", "1.0.0", spec.ChannelInline))
	p.Workflow.Limits.MaxInputTokens = 50 // the host's first request counts more
	calls := 0
	_, _, err := funcRun(t, context.Background(), p, Options{}, func(ctx context.Context, req *model.Request) (*model.Response, error) {
		calls++
		return say("done")(req), nil
	})
	if calls != 0 {
		t.Errorf("%d model calls, want none", calls)
	}
	if !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), "0 input tokens used and the next call needs") ||
		!strings.Contains(err.Error(), "limits.max-input-tokens is 50") {
		t.Errorf("error %v, want ErrBudget saying what the call needs", err)
	}
}

// Under an output budget a call asks for an answer no longer than what is
// left (model.DefaultMaxTokens at most); without one it asks for no bound,
// as before.
func TestReservationBoundsTheAnswer(t *testing.T) {
	testpar.UnlessRace(t)
	for _, tc := range []struct {
		name   string
		maxOut int
		want   []int // each call's MaxTokens
	}{
		{"no budget", 0, []int{0, 0, 0, 0}},
		{"budget", 25, []int{25, 15, 5}},
		{"large budget", 100000, []int{model.DefaultMaxTokens, model.DefaultMaxTokens, model.DefaultMaxTokens, model.DefaultMaxTokens}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := project(skill("aa", "1.0.0", spec.ChannelInline))
			p.Workflow.Limits.MaxOutputTokens = tc.maxOut
			host := scriptFunc([]step{read("aa"), call("aa_echo", map[string]string{"text": "a"}), call("aa_echo", map[string]string{"text": "b"}), say("done")}, nil)
			var got []int
			_, _, _ = funcRun(t, context.Background(), p, Options{}, billedFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
				got = append(got, req.MaxTokens)
				return host(ctx, req)
			}))
			if !slices.Equal(got, tc.want) {
				t.Errorf("calls asked for answers of at most %v tokens, want %v", got, tc.want)
			}
		})
	}
}

// Concurrent workers share a budget that admits exactly k calls: k are
// made, the others wait while those are in flight and are then refused,
// and the tokens used stay within the budget — for the run's budget and
// for an agent's. The model holds its calls until the workers it did not
// get are waiting, so without reservations all of them would call.
func TestReservationConcurrentWorkers(t *testing.T) {
	testpar.UnlessRace(t)
	const n, k = 6, 2
	tasks := make([]spec.Task, n)
	for i := range tasks {
		tasks[i] = spec.Task{ID: fmt.Sprintf("t%d", i+1), Goal: "go", Assignee: "team/iso"}
	}
	project := func() *spec.Project {
		p := project(team())
		p.Workflow.Host = nil
		p.Workflow.Limits.Concurrency = n
		p.Workflow.Tasks = tasks
		return p
	}
	// Each worker's one request counts c tokens; the model's usage is
	// the estimate, so a call books exactly what it reserved.
	var mu sync.Mutex
	counts := map[int]bool{}
	if _, _, err := funcRun(t, context.Background(), project(), Options{}, func(_ context.Context, req *model.Request) (*model.Response, error) {
		mu.Lock()
		counts[sharedTokens.request(req).Total] = true
		mu.Unlock()
		return say("done")(req), nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(counts) != 1 {
		t.Fatalf("the workers' requests count %v tokens; want one figure", counts)
	}
	var c int
	for c = range counts {
	}
	budget := k*c + c - 1

	for _, tc := range []struct {
		name string
		set  func(*spec.Limits)
	}{
		{"run", func(l *spec.Limits) { l.MaxInputTokens = budget }},
		{"agent", func(l *spec.Limits) { l.Agents = map[string]spec.Budget{"team/iso": {MaxInputTokens: budget}} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := project()
			tc.set(&p.Workflow.Limits)
			var (
				mu               sync.Mutex
				arrived, waiting int
				open             = make(chan struct{})
				opened           bool
			)
			release := func() { // mu held
				if !opened && (arrived > k || arrived == k && waiting == n-k) {
					opened = true
					close(open)
				}
			}
			rec := &event.Recorder{}
			r, err := New(p, Options{Sink: rec, Model: model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
				mu.Lock()
				arrived++
				release()
				mu.Unlock()
				select {
				case <-open:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return say("done")(req), nil
			})})
			if err != nil {
				t.Fatal(err)
			}
			r.acct.onWait = func() {
				mu.Lock()
				waiting++
				release()
				mu.Unlock()
			}
			_, _ = r.Execute(context.Background(), "")
			if arrived != k {
				t.Errorf("%d model calls, want %d", arrived, k)
			}
			refused := 0
			for _, e := range rec.Events() {
				if e.Type == event.TaskFailed {
					if !strings.Contains(e.Err, "token budget reached") || !strings.Contains(e.Err, fmt.Sprintf("max-input-tokens is %d", budget)) {
						t.Errorf("task %s failed with %q; want the budget", e.Task, e.Err)
					}
					refused++
				}
			}
			if refused != n-k {
				t.Errorf("%d tasks refused, want %d", refused, n-k)
			}
			if u, _ := r.acct.total(); u.InputTokens > budget {
				t.Errorf("%d input tokens used, over the budget of %d", u.InputTokens, budget)
			}
		})
	}
}

// A call that fails gives its reservation back: an output budget of one
// token admits one call at a time, the first fails, and the next task's
// call is made. Were the failed call's room still held, the next would
// wait for it, and the test's context ends the run there.
func TestReservationReleasedOnError(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(team())
	p.Workflow.Host = nil
	p.Workflow.Limits.Concurrency = 1
	p.Workflow.Limits.MaxOutputTokens = 1
	p.Workflow.Tasks = []spec.Task{{ID: "a", Goal: "go", Assignee: "team/iso"}, {ID: "b", Goal: "go", Assignee: "team/iso"}}
	calls := 0
	r, err := New(p, Options{Model: model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		calls++
		if calls == 1 {
			return nil, errors.New("provider down")
		}
		return say("done")(req), nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.acct.onWait = func() { cancel() }
	_, _ = r.Execute(ctx, "")
	if calls != 2 {
		t.Errorf("%d model calls, want 2: the failed call's reservation was not given back", calls)
	}
	if r.acct.heldRun != (held{}) {
		t.Errorf("%+v still held after the run", r.acct.heldRun)
	}
}

// A call waiting for room stops with its context; what others hold is
// theirs until they release it.
func TestReservationWaitCancelled(t *testing.T) {
	testpar.UnlessRace(t)
	a := &account{maxIn: 100, tasks: map[string]*tally{}, agents: map[string]*tally{}}
	first, err := a.reserve(context.Background(), model.Caller{}, 80, 0)
	if err != nil || first == nil {
		t.Fatalf("first reservation: %v, %v", first, err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	a.onWait = func() { cancel(errors.New("stopped")) }
	if _, err := a.reserve(ctx, model.Caller{}, 30, 0); err == nil || err.Error() != "stopped" {
		t.Errorf("second reservation: %v, want the context's cause", err)
	}
	if a.heldRun.in != 80 {
		t.Errorf("%d input tokens held, want the first call's 80", a.heldRun.in)
	}
	first.release()
	if a.heldRun != (held{}) {
		t.Errorf("%+v held after release", a.heldRun)
	}
	// Room given back lets the next call in at once (were it still held,
	// the call would wait, and onWait stops it).
	ctx, cancel = context.WithCancelCause(context.Background())
	defer cancel(nil)
	if r, err := a.reserve(ctx, model.Caller{}, 30, 0); err != nil || r == nil {
		t.Errorf("reservation after release: %v, %v", r, err)
	}
}

// A task sent to a worker elsewhere carries what the run's and its
// agent's budgets had left when it was dispatched, the smaller of the two
// for each kind; the worker reserves its calls in that share: a call that
// would pass it is not made.
func TestRemoteTaskHoldsItsShare(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(team())
	p.Workflow.Host = nil
	p.Workflow.Limits.MaxInputTokens = 1000
	p.Workflow.Limits.Agents = map[string]spec.Budget{"team/iso": {MaxOutputTokens: 25}}
	p.Workflow.Tasks = []spec.Task{
		{ID: "first", Goal: "one", Assignee: "team/iso"},
		{ID: "second", Goal: "two", Assignee: "team/iso", Deps: []string{"first"}},
	}
	d := &fakeDispatcher{answer: func(t *work.Attempt) *work.Outcome {
		return &work.Outcome{Result: "done " + t.Task, Usage: model.Usage{InputTokens: 300, OutputTokens: 10}}
	}}
	r, err := New(p, Options{Model: &recModel{}, Dispatcher: d})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Execute(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	for task, want := range map[string][2]int{"first": {1000, 25}, "second": {700, 15}} {
		l := d.tasks[task].Limits
		if got := [2]int{l.MaxInputTokens, l.MaxOutputTokens}; got != want {
			t.Errorf("%s dispatched with a share of %v (input, output), want %v", task, got, want)
		}
	}

	// The worker's side: the share is a budget its calls reserve in.
	task, s := effectTask(filepath.Join(t.TempDir(), "calls.log"), "")
	task.Limits.MaxInputTokens = 20 // the worker's first request counts more
	asked := 0
	res := Work(context.Background(), task, work.Options{Model: effectModel(&asked), Skill: s})
	if asked != 0 || !strings.Contains(res.Error, "token budget reached") || !strings.Contains(res.Error, "share") {
		t.Errorf("model asked %d times, outcome error %q; want no call and the share named", asked, res.Error)
	}
}

// BenchmarkReserve is one call's reservation and release under the run's
// and an agent's budgets, with no call in flight: what a budget adds to a
// model call besides counting its request (which the token cache serves).
func BenchmarkReserve(b *testing.B) {
	a := &account{maxIn: 1 << 40, maxOut: 1 << 40, perAgent: map[string]spec.Budget{"s/a": {MaxInputTokens: 1 << 40}},
		tasks: map[string]*tally{}, agents: map[string]*tally{}}
	c := model.Caller{TaskID: "t", Agent: "s/a"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		r, err := a.reserve(ctx, c, 1000, 0)
		if err != nil {
			b.Fatal(err)
		}
		r.release()
	}
}
