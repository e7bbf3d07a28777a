package natsboard

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/internal/syncbuf"
	"github.com/fsdrun/fsd/internal/testlong"
)

// TestWorkerRecreatesLostQueue: fsd's JetStream resources vanish under a
// running worker (the server restarted without its store, as
// `nats-server -js` in a container without a volume does; an operator's
// `nats stream rm`; the pool's queue removed by hand): the worker
// creates them again and takes the next run's tasks, instead of failing
// every fetch until it is restarted while runs wait forever.
func TestWorkerRecreatesLostQueue(t *testing.T) {
	testlong.Skip(t)
	const agents = "fan.*" // fanout's agents: other pools may take others
	for _, tc := range []struct {
		name string
		// lose makes fsd's resources vanish from srv (js is connected to it).
		lose func(t *testing.T, srv *server.Server, js jetstream.JetStream)
	}{
		{"server restarted without its store", func(t *testing.T, srv *server.Server, _ jetstream.JetStream) {
			port := srv.Addr().(*net.TCPAddr).Port
			srv.Shutdown()
			srv.WaitForShutdown()
			runServerWith(t, server.Options{Port: port})
		}},
		{"streams removed", func(t *testing.T, _ *server.Server, js jetstream.JetStream) {
			// The task stream first: the worker's fetches fail at once
			// ("consumer deleted"), before the server has removed the
			// stream's files. A worker that made the stream again at once
			// got one that stored nothing more once its first tasks were
			// acked: the run hung. Other pools' consumers on the stream
			// widen that window (the server stops them all first): with
			// 200 of them, a worker without removalGrace fails here most
			// times, where without them it failed one time in ten.
			for i := range 200 {
				_, err := js.CreateConsumer(context.Background(), TaskStream, jetstream.ConsumerConfig{
					Durable: fmt.Sprintf("other-pool-%d", i), FilterSubject: fmt.Sprintf("%s.pool%d.*", taskSubjects, i),
					AckPolicy: jetstream.AckExplicitPolicy})
				must(t, err)
			}
			for _, s := range []string{TaskStream, JournalStream, "KV_" + ResultsBucket, "OBJ_" + SkillsBucket} {
				must(t, js.DeleteStream(context.Background(), s))
			}
		}},
		{"queue removed", func(t *testing.T, _ *server.Server, js jetstream.JetStream) {
			must(t, js.DeleteConsumer(context.Background(), TaskStream, consumerName(agents)))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := runServer(t)
			url := srv.ClientURL()
			ctx := context.Background()
			serve(t, url, WorkerOptions{Work: engine.Work, Name: "w1", Agents: agents, Logger: zerolog.New(zerolog.NewTestWriter(t)), AckWait: 2 * time.Second})

			nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond))
			must(t, err)
			defer nc.Close()
			js, err := jetstream.New(nc)
			must(t, err)
			tc.lose(t, srv, js)
			// The worker, not a coordinator, makes the queue again.
			until(t, "the worker to create its queue again", func() bool {
				_, err := js.Consumer(ctx, TaskStream, consumerName(agents))
				return err == nil
			})

			// Two runs: the first one's acks empty the new stream's first
			// block; the second one's tasks go to the next.
			wf := fanout(t, 3, "")
			c, err := Connect(ctx, url, Options{})
			must(t, err)
			defer c.Close()
			must(t, c.Publish(ctx, project(t, wf)))
			for i := range 2 {
				res, err := runWorkflow(t, wf, c)
				if err != nil || res.Answer != "joined join" {
					t.Fatalf("run %d after the queue was lost: %v, answer %v", i+1, err, res)
				}
			}
		})
	}
}

// TestOverlappingPools: a worker whose --agents overlap a live pool's is
// refused, naming that pool; once that pool's workers have stopped (and
// nothing is in flight on its queue) the same worker starts, removing the
// stopped pool's queue, instead of being refused until an operator
// removes it by hand.
func TestOverlappingPools(t *testing.T) {
	t.Parallel() // it waits on subprocesses and its own server
	srv := runServer(t)
	ctx := context.Background()
	opts := WorkerOptions{Work: engine.Work, Agents: "weekly-report.*", CacheDir: t.TempDir(), Model: scriptedModel}
	stop := serve(t, srv.ClientURL(), opts)

	opts.Agents = ">"
	_, err := NewWorker(ctx, srv.ClientURL(), opts)
	if err == nil {
		t.Fatal("a pool overlapping a live one was accepted")
	}
	for _, want := range []string{`--agents ">" overlaps the pools taking weekly-report.*`, "must not overlap", "nats consumer rm FSD_TASKS"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	stop()
	w2, err := NewWorker(ctx, srv.ClientURL(), opts)
	if err != nil {
		t.Fatalf("a pool overlapping a stopped one: %v", err)
	}
	w2.Close()
}

func TestSubjectsCollide(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{">", "weekly-report.*", true},
		{"weekly-report.*", "weekly-report.extractor", true},
		{"weekly-report.*", "brand-voice.*", false},
		{"*.extractor", "weekly-report.*", true},
		{"_.worker", "weekly-report.>", false},
		{"a.>", "a", false},
		{"a.*", "a.b.c", false},
	} {
		if got := subjectsCollide(tc.a, tc.b); got != tc.want || subjectsCollide(tc.b, tc.a) != tc.want {
			t.Errorf("subjectsCollide(%q, %q) = %v, want %v both ways", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestCoordinatorSaysStoreLost: fsd's streams vanish under a running
// coordinator (the server restarted without its store): its waiting
// tasks fail saying what was lost and what to do, not "the watch stopped".
//
// The NATS client's own report of the loss (its results watch cannot be
// recreated) goes to the coordinator's log, not as a bare line on stderr.
func TestCoordinatorSaysStoreLost(t *testing.T) {
	testlong.Skip(t)
	srv := runServer(t)
	wf := fanout(t, 1, "")
	ctx := context.Background()
	logFile := filepath.Join(t.TempDir(), "coordinator.log")
	lf, err := os.Create(logFile)
	must(t, err)
	defer lf.Close()
	c, err := Connect(ctx, srv.ClientURL(), Options{Logger: zerolog.New(lf).Level(zerolog.DebugLevel)})
	must(t, err)
	defer c.Close()
	must(t, c.Publish(ctx, project(t, wf)))
	nc, err := nats.Connect(srv.ClientURL())
	must(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	must(t, err)
	done := make(chan error, 1)
	go func() { _, err := runWorkflow(t, wf, c); done <- err }()
	// No worker: the task waits on the queue.
	until(t, "the task on the queue", func() bool {
		s, err := js.Stream(ctx, TaskStream)
		if err != nil {
			return false
		}
		info, err := s.Info(ctx)
		return err == nil && info.State.Msgs == 1
	})
	for _, s := range []string{TaskStream, JournalStream, "KV_" + ResultsBucket, "OBJ_" + SkillsBucket} {
		must(t, js.DeleteStream(ctx, s))
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "restarted without its store? This run's queued tasks and outcomes are then lost: run it again") {
			t.Errorf("run error %v; want it to say the store was lost", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the run did not end after its streams were removed")
	}
	until(t, "the client's report in the coordinator's log", func() bool {
		return strings.Contains(readFile(t, logFile), "recreating ordered consumer")
	})
}

// TestServerRestarted: the NATS server restarts while a run's tasks wait
// on the queue. With its store nothing is lost: a worker started then
// runs them and the run ends with its answer. Without it (`nats-server
// -js` in a container without a volume) the worker creates fsd's streams
// and bucket again, as it should for the next run, and the coordinator's
// results watch follows the new, empty bucket: the coordinator must still
// see that this run's queued tasks are gone and end saying so, rather
// than wait forever for them.
func TestServerRestarted(t *testing.T) {
	testlong.Skip(t)
	for _, keepStore := range []bool{true, false} {
		name := map[bool]string{true: "with its store", false: "without its store"}[keepStore]
		t.Run(name, func(t *testing.T) {
			store := t.TempDir()
			srv := runServerWith(t, server.Options{StoreDir: store})
			url := srv.ClientURL()
			ctx := context.Background()
			wf := fanout(t, 2, "")
			var logged syncbuf.Buffer
			c, err := Connect(ctx, url, Options{Logger: zerolog.New(&logged)})
			must(t, err)
			defer c.Close()
			must(t, c.Publish(ctx, project(t, wf)))
			type result struct {
				answer string
				err    error
			}
			done := make(chan result, 1)
			go func() {
				res, err := runWorkflow(t, wf, c)
				r := result{err: err}
				if res != nil {
					r.answer = res.Answer
				}
				done <- r
			}()
			// No worker yet: the tasks wait on the queue.
			until(t, "both tasks on the queue", func() bool {
				info, err := c.res.tasks.Info(ctx)
				return err == nil && info.State.Msgs == 2
			})
			port := srv.Addr().(*net.TCPAddr).Port
			srv.Shutdown()
			srv.WaitForShutdown()
			if !keepStore {
				store = t.TempDir()
			}
			runServerWith(t, server.Options{StoreDir: store, Port: port})
			serve(t, url, WorkerOptions{Work: engine.Work, Name: "w1", AckWait: 2 * time.Second})

			select {
			case r := <-done:
				switch {
				case keepStore && (r.err != nil || r.answer != "joined join"):
					t.Errorf("run across a restart with the store: answer %q, error %v; want joined join", r.answer, r.err)
				case !keepStore && (r.err == nil || !strings.Contains(r.err.Error(), "tasks t0 and t1 failed: watching results: the watch of bucket fsd-results stopped: was it removed, or the NATS server restarted without its store? This run's queued tasks and outcomes are then lost: run it again")):
					t.Errorf("run across a restart without the store: answer %q, error %v; want it to say once that the store was lost", r.answer, r.err)
				}
			case <-time.After(2 * time.Minute):
				t.Fatal("the run did not end after the server restarted")
			}
			// A clean shutdown leaves the client no error to name.
			if o := logged.String(); !strings.Contains(o, "lost the connection to NATS; reconnecting") {
				t.Errorf("the coordinator's log says of the restart:\n%s", o)
			}
		})
	}
}

// TestAgentsPatternAsWritten: --agents names skills as a workflow does,
// 'données-été.*' included, though a task's subject carries such an id
// encoded (token): the pool takes that skill's tasks, where its filter
// matched none and the run waited for good.
func TestAgentsPatternAsWritten(t *testing.T) {
	t.Parallel() // it waits on subprocesses and its own server
	srv := runServer(t)
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "skills", "été"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "skills", "été", "été.skill.yaml"), []byte(`id: données-été
name: Données été
description: Answers in summer.
version: 1.0.0
instructions: Answer.
agents:
  lecteur: {description: Reads., prompt: Read., max-steps: 2}
`), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "été.script.yaml"), []byte("agents:\n  lecteur: [{say: 'lu {{.Task.ID}}'}]\n"), 0o644))
	wf := filepath.Join(dir, "été.workflow.yaml")
	must(t, os.WriteFile(wf, []byte("name: ete\nmodel: scripted\nscript: été.script.yaml\nskills: [./skills]\ninput: go\ntasks:\n  - {id: t1, assignee: données-été/lecteur, goal: read}\n"), 0o644))

	ctx := context.Background()
	serve(t, srv.ClientURL(), WorkerOptions{Work: engine.Work, Name: "w1", Agents: "données-été.*"})
	c, err := Connect(ctx, srv.ClientURL(), Options{})
	must(t, err)
	defer c.Close()
	must(t, c.Publish(ctx, project(t, wf)))
	res, err := runWorkflow(t, wf, c)
	if err != nil || res.Answer != "lu t1" {
		t.Fatalf("run: %v, answer %v", err, res)
	}
}

// TestCheckAgents: a --agents pattern that cannot match a task's subject
// (SKILL.AGENT: two tokens) is refused when the worker starts, saying
// what would, instead of making a pool that never gets a task.
func TestCheckAgents(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ pattern, want string }{
		{">", ""},
		{"*.*", ""},
		{"*.>", ""},
		{"weekly-report.*", ""},
		{"weekly-report.>", ""},
		{"_.worker", ""},
		{"données-été.lecteur", ""},
		{"weekly-report", `--agents "weekly-report" matches no task: a task's subject is SKILL.AGENT; did you mean 'weekly-report.*'?`},
		{"*", `--agents "*" matches no task: a task's subject is SKILL.AGENT; did you mean '*.*'?`},
		{"a.b.c", `--agents "a.b.c" matches no task: a task's subject is SKILL.AGENT (two tokens)`},
		{"a.b.>", `--agents "a.b.>" matches no task: a task's subject is SKILL.AGENT (two tokens)`},
		{"a..b", `--agents "a..b": want a subject pattern such as 'weekly-report.*' or '>' (an empty token)`},
		{".a", `--agents ".a": want a subject pattern such as 'weekly-report.*' or '>' (an empty token)`},
		{">.x", `--agents ">.x": want a subject pattern such as 'weekly-report.*' or '>' ('>' only last)`},
		{"a b.*", `--agents "a b.*": want a subject pattern such as 'weekly-report.*' or '>' (no spaces)`},
		{"", `--agents "": want a subject pattern such as 'weekly-report.*' or '>'`},
	} {
		err := CheckAgents(tc.pattern)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("CheckAgents(%q) = %q, want %q", tc.pattern, got, tc.want)
		}
	}
}

// TestStaleAtEveryLook: a pool is stale only when every look finds it
// idle. A live pool's workers renew their pull requests with a gap of
// milliseconds between one and the next: two looks that both fell in such
// gaps made a live pool's queue be removed (its workers' fetches then
// failed, and the refused worker started overlapping it).
func TestStaleAtEveryLook(t *testing.T) {
	t.Parallel()
	looks := []map[string]string{
		{"live": "weekly-report.*", "stopped": "brand-voice.*"}, // live's renewal gap
		{"stopped": "brand-voice.*"},
		{"live": "weekly-report.*", "stopped": "brand-voice.*"}, // a gap again
	}
	i := 0
	got := stale(context.Background(), len(looks), 0, func() map[string]string {
		l := map[string]string{}
		for k, v := range looks[i] {
			l[k] = v
		}
		i++
		return l
	})
	if len(got) != 1 || got["stopped"] != "brand-voice.*" || i != len(looks) {
		t.Errorf("stale = %v after %d looks; want only the stopped pool, after %d", got, i, len(looks))
	}
	i = 0
	looks = []map[string]string{{"stopped": "brand-voice.*"}, nil}
	if got := stale(context.Background(), 2, 0, func() map[string]string { i++; return looks[i-1] }); len(got) != 0 {
		t.Errorf("stale = %v when a look failed; want none", got)
	}
}

// TestStaleSchedule: the schedule removeStalePools looks with, from the
// production constants: seven looks half a second apart over three
// seconds, a span longer than a live worker takes to renew its pull
// request (so each look falls within one and a live pool shows a worker
// at some look), several looks per renewal (so gaps of milliseconds
// between one request and the next do not catch them all).
func TestStaleSchedule(t *testing.T) {
	t.Parallel()
	looks, every := staleSchedule()
	if looks != 7 || every != 500*time.Millisecond || time.Duration(looks-1)*every != 3*time.Second {
		t.Errorf("stale looks %d times every %s over %s; want 7 looks every 500ms over 3s", looks, every, time.Duration(looks-1)*every)
	}
	if span := time.Duration(looks-1) * every; span <= pullRenew || every >= pullRenew/2 {
		t.Errorf("looks every %s over %s; want a span past the pull request renewal (%s) and several looks within it", every, span, pullRenew)
	}
}
