package board

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/event"
)

// echo completes every task with "<id>(<dep results>)", so a result shows
// which results its task was handed.
func echo(_ context.Context, t *Task, deps []DepResult) (string, error) {
	var parts []string
	for _, d := range deps {
		parts = append(parts, d.TaskID+"@"+d.Agent+"="+d.Result)
	}
	return t.ID + "(" + strings.Join(parts, ",") + ")", nil
}

func newBoard(t *testing.T, opts Options) *Board {
	t.Helper()
	if opts.Backoff == nil {
		opts.Backoff = func(int) time.Duration { return 0 }
	}
	return New(opts)
}

func mustAdd(t *testing.T, b *Board, specs ...TaskSpec) {
	t.Helper()
	if _, err := b.AddAll(specs); err != nil {
		t.Fatalf("AddAll: %v", err)
	}
}

// noLeak fails the test if goroutines started during it are still alive
// shortly after it ends. It polls rather than sleeping a fixed time.
func noLeak(t *testing.T) {
	t.Helper()
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > base {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				n := runtime.Stack(buf, true)
				t.Errorf("goroutines leaked: %d > %d\n%s", runtime.NumGoroutine(), base, buf[:n])
				return
			}
			runtime.Gosched()
			time.Sleep(time.Millisecond)
		}
	})
}

func TestAddChecks(t *testing.T) {
	roster := func() []string { return []string{"extractor", "summarizer"} }
	tests := []struct {
		name     string
		existing []TaskSpec
		add      []TaskSpec
		opts     Options
		code     Code
		msg      string
	}{
		{name: "unknown assignee", add: []TaskSpec{{Goal: "g", Assignee: "writer"}},
			code: CodeUnknownAssignee, msg: `new task "g": unknown assignee "writer"; the roster is [extractor summarizer] (omit assignee for the default worker)`},
		{name: "unknown dependency", add: []TaskSpec{{ID: "a", Goal: "g", Deps: []string{"zz"}}},
			code: CodeUnknownDependency, msg: `task "a" depends on "zz", which is not on the board`},
		{name: "self dependency", add: []TaskSpec{{ID: "a", Goal: "g", Deps: []string{"a"}}},
			code: CodeDependencyCycle, msg: `dependency cycle: "a" -> "a"`},
		{name: "cycle in batch from earliest task", add: []TaskSpec{
			{ID: "x", Goal: "g"},
			{ID: "c", Goal: "g", Deps: []string{"a"}},
			{ID: "a", Goal: "g", Deps: []string{"b"}},
			{ID: "b", Goal: "g", Deps: []string{"c", "x"}},
		}, code: CodeDependencyCycle, msg: `dependency cycle: "c" -> "a" -> "b" -> "c"`},
		{name: "duplicate id", existing: []TaskSpec{{ID: "a", Goal: "g"}}, add: []TaskSpec{{ID: "a", Goal: "g"}},
			code: CodeDuplicateID, msg: `task id "a" is already on the board; pick another id`},
		{name: "pending cap", opts: Options{MaxPending: 2}, existing: []TaskSpec{{Goal: "g"}, {Goal: "g"}}, add: []TaskSpec{{Goal: "g"}},
			code: CodePendingCap, msg: "pending task cap exceeded: at most 2 tasks may wait to run and 2 already do; run the board first"},
		{name: "total cap", opts: Options{MaxTotal: 1}, existing: []TaskSpec{{Goal: "g"}}, add: []TaskSpec{{Goal: "g"}},
			code: CodeTotalCap, msg: "total task cap exceeded: the board allows 1 tasks over the run and has 1"},
		{name: "empty goal", add: []TaskSpec{{ID: "a"}}, code: CodeInvalidTask, msg: `task "a" has no goal`},
		{name: "id with space", add: []TaskSpec{{ID: "a b", Goal: "g"}}, code: CodeInvalidTask, msg: `task id "a b" contains white space or control characters`},
		{name: "the host's name", add: []TaskSpec{{ID: "host", Goal: "g"}}, code: CodeInvalidTask, msg: `task id "host" is reserved for the host; pick another id`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Roster = roster
			b := newBoard(t, tt.opts)
			mustAdd(t, b, tt.existing...)
			_, err := b.AddAll(tt.add)
			var be *Error
			if !errors.As(err, &be) {
				t.Fatalf("AddAll = %v, want *Error", err)
			}
			if be.Code != tt.code || be.Message != tt.msg {
				t.Errorf("got %s %q\nwant %s %q", be.Code, be.Message, tt.code, tt.msg)
			}
			if !errors.Is(err, &Error{Code: tt.code}) {
				t.Errorf("errors.Is does not match code %s", tt.code)
			}
			if got := len(b.Tasks()); got != len(tt.existing) {
				t.Errorf("a rejected batch added tasks: %d on the board, want %d", got, len(tt.existing))
			}
		})
	}
}

func TestDefaultIDs(t *testing.T) {
	b := newBoard(t, Options{})
	mustAdd(t, b, TaskSpec{Goal: "a"}, TaskSpec{ID: "t2", Goal: "b"}, TaskSpec{Goal: "c"})
	mustAdd(t, b, TaskSpec{Goal: "d", Deps: []string{"t1", "t3", "t1"}})
	var got []string
	for _, tk := range b.Tasks() {
		got = append(got, tk.ID+":"+strings.Join(tk.Deps, "+"))
	}
	want := []string{"t1:", "t2:", "t3:", "t4:t1+t3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
}

func TestRunHandsDependencyResults(t *testing.T) {
	noLeak(t)
	b := newBoard(t, Options{})
	mustAdd(t, b,
		TaskSpec{ID: "join", Goal: "j", Assignee: "w", Deps: []string{"b", "a"}},
		TaskSpec{ID: "a", Goal: "a"},
		TaskSpec{ID: "b", Goal: "b", Assignee: "x", Deps: []string{"a"}},
	)
	rep, err := b.Run(context.Background(), echo)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, tk := range rep.Tasks {
		got[tk.ID] = string(tk.Status) + " " + tk.Result
	}
	want := map[string]string{
		"a":    "completed a()",
		"b":    "completed b(a@worker=a())",
		"join": "completed join(b@x=b(a@worker=a()),a@worker=a())",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if rep.Status != StatusDrained || rep.Stranded != nil {
		t.Errorf("status %s stranded %v, want drained", rep.Status, rep.Stranded)
	}
}

func TestFailureStrandsDependents(t *testing.T) {
	noLeak(t)
	rec := &event.Recorder{}
	b := newBoard(t, Options{Sink: rec, Run: "r1"})
	mustAdd(t, b,
		TaskSpec{ID: "bad", Goal: "g"},
		TaskSpec{ID: "ok", Goal: "g"},
		TaskSpec{ID: "child", Goal: "g", Deps: []string{"bad", "ok"}},
		TaskSpec{ID: "grandchild", Goal: "g", Deps: []string{"child"}},
		TaskSpec{ID: "other", Goal: "g", Deps: []string{"ok"}},
	)
	rep, err := b.Run(context.Background(), func(ctx context.Context, t *Task, deps []DepResult) (string, error) {
		if t.ID == "bad" {
			return "", errors.New("no rows for that week")
		}
		return echo(ctx, t, deps)
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != StatusBlocked {
		t.Errorf("status = %s, want blocked", rep.Status)
	}
	if diff := cmp.Diff([]string{"child", "grandchild"}, rep.Stranded); diff != "" {
		t.Errorf("stranded (-want +got):\n%s", diff)
	}
	statuses := map[string]Status{}
	for _, tk := range rep.Tasks {
		statuses[tk.ID] = tk.Status
	}
	want := map[string]Status{"bad": Failed, "ok": Completed, "child": Pending, "grandchild": Pending, "other": Completed}
	if diff := cmp.Diff(want, statuses); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if rep.Tasks[0].Error != "no rows for that week" {
		t.Errorf("error = %q", rep.Tasks[0].Error)
	}
	// The coordinator replans: cancel the stranded tasks and the board drains.
	for _, id := range rep.Stranded {
		if _, err := b.Cancel(id); err != nil {
			t.Fatal(err)
		}
	}
	rep, _ = b.Run(context.Background(), echo)
	if rep.Status != StatusDrained {
		t.Errorf("after cancelling the stranded tasks: status %s, want drained", rep.Status)
	}
	var failed, finished int
	for _, e := range rec.Events() {
		if e.Run != "r1" {
			t.Errorf("event %s not tagged with the run", e.Type)
		}
		switch e.Type {
		case event.TaskFailed:
			failed++
			if e.Task != "bad" || e.Agent != DefaultWorker || e.Err == "" {
				t.Errorf("task.failed event = %+v", e)
			}
		case event.BoardFinished:
			finished++
		}
	}
	if failed != 1 || finished != 2 {
		t.Errorf("%d task.failed and %d board.finished events, want 1 and 2", failed, finished)
	}
}

// TestConcurrencyHeldAtLimit proves the limit (D3) without timing: in a
// synctest bubble every runner blocks until released, and synctest.Wait
// returns only when every goroutine of the run is durably blocked — the
// runners started so far, and the scheduler waiting for a free slot. At
// that point exactly `limit` runners have started: no more can, and none
// is still on its way. Without the limit all 30 would be in flight.
func TestConcurrencyHeldAtLimit(t *testing.T) {
	for _, limit := range []int{1, 3, 4, 8} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBoard(t, Options{Concurrency: limit})
				for range 30 {
					mustAdd(t, b, TaskSpec{Goal: "g"})
				}
				var inFlight atomic.Int64
				release := make(chan struct{})
				done := make(chan Report)
				go func() {
					rep, err := b.Run(context.Background(), func(ctx context.Context, t *Task, deps []DepResult) (string, error) {
						inFlight.Add(1)
						defer inFlight.Add(-1)
						<-release
						return "done", nil
					})
					if err != nil {
						t.Errorf("Run: %v", err)
					}
					done <- rep
				}()
				synctest.Wait()
				if got := inFlight.Load(); got != int64(limit) {
					t.Errorf("runners in flight with every goroutine blocked = %d, want the limit %d", got, limit)
				}
				close(release)
				if rep := <-done; rep.Status != StatusDrained {
					t.Errorf("Run = %s", rep.Status)
				}
			})
		})
	}
}

func TestTimeoutRetryPanic(t *testing.T) {
	noLeak(t)
	var flaky atomic.Int64
	b := newBoard(t, Options{Policy: func(a string) (time.Duration, int) {
		switch a {
		case "slow":
			return 20 * time.Millisecond, 1
		case "flaky":
			return 0, 2
		}
		return 0, 0
	}, Roster: func() []string { return []string{"slow", "flaky", "crash"} }})
	mustAdd(t, b,
		TaskSpec{ID: "slow", Goal: "g", Assignee: "slow"},
		TaskSpec{ID: "flaky", Goal: "g", Assignee: "flaky"},
		TaskSpec{ID: "crash", Goal: "g", Assignee: "crash"},
		TaskSpec{ID: "after", Goal: "g", Deps: []string{"flaky"}},
	)
	rep, err := b.Run(context.Background(), func(ctx context.Context, t *Task, deps []DepResult) (string, error) {
		switch t.ID {
		case "slow":
			<-ctx.Done() // a worker that honours its context
			return "", ctx.Err()
		case "flaky":
			if flaky.Add(1) < 3 {
				return "", fmt.Errorf("attempt %d: rate limited", t.Attempts)
			}
			return fmt.Sprintf("ok on attempt %d", t.Attempts), nil
		case "crash":
			var m map[string]int
			m["x"]++ // a panic inside a tool
		}
		return echo(ctx, t, deps)
	})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Status   Status
		Attempts int
		Result   string
		Error    string
	}
	got := map[string]row{}
	for _, tk := range rep.Tasks {
		got[tk.ID] = row{tk.Status, tk.Attempts, tk.Result, tk.Error}
	}
	want := map[string]row{
		"slow":  {Failed, 2, "", "timed out after 20ms: context deadline exceeded"},
		"flaky": {Completed, 3, "ok on attempt 3", ""},
		"crash": {Failed, 1, "", "panic: assignment to entry in nil map"},
		"after": {Completed, 1, "after(flaky@flaky=ok on attempt 3)", ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
}

// TestCancelRun cancels the run's context while two workers are blocked:
// Run returns promptly, the finished task keeps its result, the
// interrupted ones are cancelled, the rest stay pending, nothing leaks.
func TestCancelRun(t *testing.T) {
	noLeak(t)
	rec := &event.Recorder{}
	b := newBoard(t, Options{Concurrency: 2, Sink: rec})
	mustAdd(t, b, TaskSpec{ID: "quick", Goal: "g"})
	for i := range 5 {
		mustAdd(t, b, TaskSpec{ID: fmt.Sprint("block", i), Goal: "g", Deps: []string{"quick"}})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var blocked atomic.Int64
	var wrongCause atomic.Bool
	rep, err := b.Run(ctx, func(ctx context.Context, t *Task, deps []DepResult) (string, error) {
		if t.ID == "quick" {
			return "fast", nil
		}
		if blocked.Add(1) == 2 {
			cancel() // Ctrl-C with two workers mid-task
		}
		<-ctx.Done()
		if errors.Is(context.Cause(ctx), ErrTaskCancelled) {
			wrongCause.Store(true)
		}
		return "", ctx.Err()
	})
	if !errors.Is(err, context.Canceled) || rep.Status != StatusCancelled {
		t.Fatalf("Run = %s, %v; want cancelled, context.Canceled", rep.Status, err)
	}
	count := map[Status]int{}
	for _, tk := range rep.Tasks {
		count[tk.Status]++
	}
	want := map[Status]int{Completed: 1, Cancelled: 2, Pending: 3}
	if diff := cmp.Diff(want, count); diff != "" {
		t.Errorf("status counts (-want +got):\n%s", diff)
	}
	if rep.Tasks[0].Result != "fast" {
		t.Errorf("finished work lost: %+v", rep.Tasks[0])
	}
	if wrongCause.Load() {
		t.Error("an interrupted run's task has cause ErrTaskCancelled: a remote runner would stop work a resume should pick up")
	}
	evs := rec.Events()
	if last := evs[len(evs)-1]; last.Type != event.BoardFinished || last.Status != StatusCancelled {
		t.Errorf("last event = %s %s, want board.finished cancelled", last.Type, last.Status)
	}
}

func TestCancelTask(t *testing.T) {
	noLeak(t)
	b := newBoard(t, Options{})
	mustAdd(t, b,
		TaskSpec{ID: "skip", Goal: "g"},
		TaskSpec{ID: "needs-skip", Goal: "g", Deps: []string{"skip"}},
		TaskSpec{ID: "long", Goal: "g"},
	)
	if _, err := b.Cancel("skip"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Cancel("nope"); !errors.Is(err, ErrTaskNotFound) {
		t.Errorf("Cancel(nope) = %v, want task_not_found", err)
	}
	var cause error
	rep, err := b.Run(context.Background(), func(ctx context.Context, t *Task, deps []DepResult) (string, error) {
		// Cancelling a running task reaches the worker through ctx.
		if _, err := b.Cancel(t.ID); err != nil {
			return "", err
		}
		<-ctx.Done()
		cause = context.Cause(ctx)
		return "", ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	// The cause tells a cancelled task from an interrupted run.
	if cause != ErrTaskCancelled {
		t.Errorf("cause of a cancelled task's context: %v, want ErrTaskCancelled", cause)
	}
	got := map[string]Status{}
	for _, tk := range rep.Tasks {
		got[tk.ID] = tk.Status
	}
	if diff := cmp.Diff(map[string]Status{"skip": Cancelled, "needs-skip": Pending, "long": Cancelled}, got); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if rep.Status != StatusBlocked || !slices.Equal(rep.Stranded, []string{"needs-skip"}) {
		t.Errorf("status %s stranded %v", rep.Status, rep.Stranded)
	}
	if _, err := b.Cancel("long"); !errors.Is(err, ErrTaskFinished) {
		t.Errorf("Cancel(finished) = %v, want task_finished", err)
	}
}

func TestAddDuringRunJoinsTheRun(t *testing.T) {
	noLeak(t)
	b := newBoard(t, Options{})
	mustAdd(t, b, TaskSpec{ID: "first", Goal: "g"})
	rep, err := b.Run(context.Background(), func(ctx context.Context, t *Task, deps []DepResult) (string, error) {
		if t.ID == "first" {
			if _, err := b.Add(TaskSpec{ID: "second", Goal: "g", Deps: []string{"first"}}); err != nil {
				return "", err
			}
			if _, err := b.Add(TaskSpec{ID: "free", Goal: "g"}); err != nil {
				return "", err
			}
		}
		return echo(ctx, t, deps)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range rep.Tasks {
		if tk.Status != Completed {
			t.Errorf("%s is %s, want completed", tk.ID, tk.Status)
		}
	}
	if len(rep.Tasks) != 3 {
		t.Errorf("%d tasks, want 3", len(rep.Tasks))
	}
}

func TestRunWhileRunning(t *testing.T) {
	b := newBoard(t, Options{})
	mustAdd(t, b, TaskSpec{Goal: "g"})
	_, err := b.Run(context.Background(), func(ctx context.Context, t *Task, deps []DepResult) (string, error) {
		_, err := b.Run(ctx, echo)
		return "", err
	})
	if err != nil {
		t.Fatal(err)
	}
	if tk, _ := b.Get("t1"); !strings.Contains(tk.Error, "already running") {
		t.Errorf("nested Run error = %q", tk.Error)
	}
}

func TestAncestors(t *testing.T) {
	b := newBoard(t, Options{})
	mustAdd(t, b,
		TaskSpec{ID: "a", Goal: "g"}, TaskSpec{ID: "b", Goal: "g"},
		TaskSpec{ID: "c", Goal: "g", Deps: []string{"b"}},
		TaskSpec{ID: "d", Goal: "g", Deps: []string{"c", "a"}},
		TaskSpec{ID: "e", Goal: "g", Deps: []string{"d"}},
	)
	if diff := cmp.Diff([]string{"a", "b", "c", "d"}, b.Ancestors("e")); diff != "" {
		t.Errorf("Ancestors (-want +got):\n%s", diff)
	}
	if got := b.Ancestors("a"); got != nil {
		t.Errorf("Ancestors(a) = %v", got)
	}
}

func TestEventsTagged(t *testing.T) {
	rec := &event.Recorder{}
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b := newBoard(t, Options{Sink: rec, Run: "run-7", Now: func() time.Time { return clock }, Roster: func() []string { return []string{"s/x"} }})
	mustAdd(t, b, TaskSpec{ID: "a", Goal: "ga", Assignee: "s/x"}, TaskSpec{ID: "b", Goal: "gb", Deps: []string{"a"}})
	if _, err := b.Run(context.Background(), echo); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range rec.Events() {
		if e.Run != "run-7" || !e.Time.Equal(clock) {
			t.Errorf("event %+v lacks run or time", e)
		}
		got = append(got, fmt.Sprintf("%s %s %s %s%s", e.Type, e.Task, e.Agent, e.Result, e.Status))
	}
	want := []string{
		"task.added a s/x ",
		"task.added b worker ",
		"task.started a s/x ",
		"task.completed a s/x a()",
		"task.started b worker ",
		"task.completed b worker b(a@s/x=a())",
		"board.finished   drained",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// A runner that has done its work and waits on the disk (Leave) does not
// hold a concurrency slot: with a limit of 1, every task reaches its
// wait, yet no two ever work at once.
func TestLeaveGivesTheSlotAway(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBoard(t, Options{Concurrency: 1})
		for range 5 {
			mustAdd(t, b, TaskSpec{Goal: "g"})
		}
		var working, most, waiting atomic.Int64
		disk := make(chan struct{})
		done := make(chan Report)
		go func() {
			rep, _ := b.Run(context.Background(), func(ctx context.Context, t *Task, deps []DepResult) (string, error) {
				if n := working.Add(1); n > most.Load() {
					most.Store(n)
				}
				time.Sleep(time.Millisecond)
				working.Add(-1)
				Leave(ctx)
				waiting.Add(1)
				<-disk
				return "done", nil
			})
			done <- rep
		}()
		// Fake time: each round lets the sleeping worker finish.
		for range 100 {
			synctest.Wait()
			if waiting.Load() == 5 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if got := waiting.Load(); got != 5 {
			t.Errorf("%d runners reached the wait with every goroutine blocked, want all 5", got)
		}
		close(disk)
		if rep := <-done; rep.Status != StatusDrained {
			t.Errorf("Run = %s", rep.Status)
		}
		if most.Load() != 1 {
			t.Errorf("%d runners worked at once under a limit of 1", most.Load())
		}
	})
}

// A retry after an attempt that left its slot takes one again first.
func TestRetryAfterLeaveTakesASlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBoard(t, Options{Concurrency: 1, Policy: func(string) (time.Duration, int) { return 0, 1 }})
		mustAdd(t, b, TaskSpec{ID: "a", Goal: "g"}, TaskSpec{ID: "b", Goal: "g"})
		var working, most atomic.Int64
		rep, err := b.Run(context.Background(), func(ctx context.Context, t *Task, deps []DepResult) (string, error) {
			if n := working.Add(1); n > most.Load() {
				most.Store(n)
			}
			time.Sleep(time.Millisecond)
			working.Add(-1)
			Leave(ctx)
			if t.ID == "a" && t.Attempts == 1 {
				return "", errors.New("lost the disk")
			}
			return "done", nil
		})
		if err != nil || rep.Status != StatusDrained {
			t.Fatalf("Run = %+v, %v", rep, err)
		}
		if most.Load() != 1 {
			t.Errorf("%d attempts worked at once under a limit of 1", most.Load())
		}
	})
}
