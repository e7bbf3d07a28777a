package natsboard

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// TestWorkerRecreatesLostQueue: fsd's JetStream resources vanish under a
// running worker (the server restarted without its store, as
// `nats-server -js` in a container without a volume does; an operator's
// `nats stream rm`; the pool's queue removed after PoolIdle): the worker
// creates them again and takes the next run's tasks, instead of failing
// every fetch until it is restarted while runs wait forever.
func TestWorkerRecreatesLostQueue(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose func(ctx context.Context, js jetstream.JetStream) error
	}{
		{"store lost", func(ctx context.Context, js jetstream.JetStream) error {
			for _, s := range []string{TaskStream, JournalStream, "KV_" + ResultsBucket, "OBJ_" + SkillsBucket} {
				if err := js.DeleteStream(ctx, s); err != nil {
					return err
				}
			}
			return nil
		}},
		{"queue removed", func(ctx context.Context, js jetstream.JetStream) error {
			return js.DeleteConsumer(ctx, TaskStream, consumerName(">"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := runServer(t)
			ctx := context.Background()
			w, err := NewWorker(ctx, srv.ClientURL(), WorkerOptions{Name: "w1", CacheDir: t.TempDir(),
				Model: scriptedModel, Logger: zerolog.Nop(), AckWait: 2 * time.Second})
			must(t, err)
			defer w.Close()
			wctx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { _ = w.Run(wctx); close(done) }()
			defer func() { stop(); <-done }()

			nc, err := nats.Connect(srv.ClientURL())
			must(t, err)
			defer nc.Close()
			js, err := jetstream.New(nc)
			must(t, err)
			must(t, tc.lose(ctx, js))
			// The worker, not a coordinator, makes the queue again.
			until(t, "the worker to create its queue again", func() bool {
				_, err := js.Consumer(ctx, TaskStream, consumerName(">"))
				return err == nil
			})

			wf := fanout(t, 3, "")
			c, err := Connect(ctx, srv.ClientURL(), Options{})
			must(t, err)
			defer c.Close()
			must(t, c.Publish(ctx, project(t, wf)))
			res, err := runWorkflow(t, wf, c)
			if err != nil || res.Answer != "joined join" {
				t.Fatalf("run after the queue was lost: %v, answer %v", err, res)
			}
		})
	}
}

// TestOverlappingPoolExplained: a worker whose --agents overlap another
// pool's is refused with the other pool's pattern and how a stopped
// pool's queue goes away (PoolIdle), and that queue carries the
// threshold, so a pool stopped for good does not refuse the next one.
func TestOverlappingPoolExplained(t *testing.T) {
	srv := runServer(t)
	ctx := context.Background()
	opts := WorkerOptions{Agents: "weekly-report.*", CacheDir: t.TempDir(), Model: scriptedModel, Logger: zerolog.Nop()}
	w, err := NewWorker(ctx, srv.ClientURL(), opts)
	must(t, err)
	defer w.Close()
	if got := w.queue().CachedInfo().Config.InactiveThreshold; got != PoolIdle {
		t.Errorf("the pool's queue is removed after %v idle, want PoolIdle (%v)", got, PoolIdle)
	}
	opts.Agents = ">"
	_, err = NewWorker(ctx, srv.ClientURL(), opts)
	if err == nil {
		t.Fatal("an overlapping pool was accepted")
	}
	for _, want := range []string{`--agents ">" overlaps the pools taking weekly-report.*`, "must not overlap", "goes away a minute after its last worker stops", "nats consumer rm FSD_TASKS"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
