package natsboard

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/work"
)

// countingWorker starts a worker named w1 trusting wf's skills whose
// model answers at once and counts its calls: running until the test
// ends when run is set, else left to the test to hand it deliveries.
func countingWorker(t *testing.T, url, wf string, run bool) (*Worker, *atomic.Int32) {
	t.Helper()
	var asked atomic.Int32
	o := WorkerOptions{Work: engine.Work, Name: "w1", Trust: []string{filepath.Join(filepath.Dir(wf), "skills")}, AckWait: 10 * time.Second,
		CacheDir: t.TempDir(),
		Model: func(string, string) (model.Model, error) {
			return model.Func(func(context.Context, *model.Request) (*model.Response, error) {
				asked.Add(1)
				return &model.Response{Text: "ran"}, nil
			}), nil
		}}
	if run {
		var w *Worker
		serveWith(t, url, o, func(x *Worker) { w = x })
		return w, &asked
	}
	w, err := NewWorker(context.Background(), url, o)
	must(t, err)
	t.Cleanup(w.Close)
	return w, &asked
}

// TestHeardCancelRefusesDelivery: a worker that heard the cancel of an
// attempt it did not run refuses the attempt's message when it comes
// (its delivery does not look for an outcome): the task does not run,
// and the worker commits the cancellation.
func TestHeardCancelRefusesDelivery(t *testing.T) {
	t.Parallel()
	srv := runServer(t)
	wf := napProject(t, filepath.Join(t.TempDir(), "unused"))
	c := coordinator(t, srv.ClientURL(), wf)
	w, asked := countingWorker(t, srv.ClientURL(), wf, true)
	key := ResultKey("r-heard", "nap", 1)
	// As a coordinator's cancel reaches the workers while the message is
	// on its way to one of them. The worker's subscription to cancels is
	// on the server first (a round trip on its connection): a cancel
	// published before it would reach nobody, and be heard never.
	must(t, w.res.nc.Flush())
	must(t, c.res.nc.Publish(cancelsSubject(key), nil))
	until(t, "the worker to hear the cancel", func() bool {
		w.running.mu.Lock()
		defer w.running.mu.Unlock()
		return w.running.heard[key]
	})
	res, err := c.Dispatch(context.Background(), napTask("r-heard", "nap"), nil, nil)
	must(t, err)
	if res.Error != cancelledMessage || res.Worker != "w1" {
		t.Errorf("outcome %+v; want w1's, saying the task was cancelled", res)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("a cancelled task ran (model asked %d times)", n)
	}
}

// TestDeliveryAcrossReconnectLooks: a first delivery asked for before the
// worker's connection came back (it may have missed a cancel) looks for
// a committed outcome and does not run the task when there is one; one
// asked for on the same connection runs without looking.
func TestDeliveryAcrossReconnectLooks(t *testing.T) {
	t.Parallel()
	srv := runServer(t)
	wf := napProject(t, filepath.Join(t.TempDir(), "unused"))
	c := coordinator(t, srv.ClientURL(), wf)
	w, asked := countingWorker(t, srv.ClientURL(), wf, false)
	for _, reconnected := range []bool{true, false} {
		run := "r-reconnected"
		if !reconnected {
			run = "r-connected"
		}
		done := make(chan *work.Outcome, 1)
		go func() {
			res, err := c.Dispatch(context.Background(), napTask(run, "nap"), nil, nil)
			if err != nil {
				res = &work.Outcome{Error: err.Error()}
			}
			done <- res
		}()
		var msg jetstream.Msg
		until(t, "the task message", func() bool {
			batch, err := w.queue().Fetch(1, jetstream.FetchMaxWait(time.Second))
			if err != nil {
				return false
			}
			for m := range batch.Messages() {
				msg = m
			}
			return msg != nil
		})
		// An outcome committed meanwhile, as a coordinator's cancel
		// commits one while the worker's connection is down.
		key := ResultKey(run, "nap", 1)
		data, _ := json.Marshal(Outcome{V: WireVersion, Outcome: work.Outcome{Error: cancelledMessage}})
		_, err := c.res.results.Create(context.Background(), key, signOutcome(data, outcomeKey(c.opts.Key, key), key))
		must(t, err)
		if res := <-done; res.Error != cancelledMessage {
			t.Fatalf("%s: Dispatch = %+v, want the committed cancellation", run, res)
		}
		d := delivery{msg: msg, asked: time.Now(), reconnects: w.res.nc.Stats().Reconnects}
		if reconnected {
			d.reconnects++ // asked for on the connection before this one
		}
		before := asked.Load()
		w.handle(context.Background(), d)
		ran := asked.Load() > before
		if ran == reconnected {
			t.Errorf("%s: the task ran: %v; want it run only when the delivery came on the same connection", run, ran)
		}
	}
}

// TestCancelTakesQueuedMessageOff: the cancel of an attempt whose message
// waits in the queue removes the message, so no worker is ever handed it
// (a worker whose queue is older than the message runs it without
// looking for an outcome).
func TestCancelTakesQueuedMessageOff(t *testing.T) {
	t.Parallel()
	srv := runServer(t)
	c := coordinator(t, srv.ClientURL(), napProject(t, filepath.Join(t.TempDir(), "unused")))
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan *work.Outcome, 1)
	go func() {
		res, err := c.Dispatch(ctx, napTask("r-off", "nap"), nil, nil)
		if err != nil {
			res = &work.Outcome{Error: err.Error()}
		}
		done <- res
	}()
	until(t, "the task message to be queued", func() bool {
		info, err := c.res.tasks.Info(context.Background())
		return err == nil && info.State.Msgs == 1
	})
	cancel(board.ErrTaskCancelled)
	if res := <-done; res.Error != cancelledMessage {
		t.Fatalf("Dispatch = %+v; want the cancellation", res)
	}
	info, err := c.res.tasks.Info(context.Background())
	must(t, err)
	if info.State.Msgs != 0 {
		t.Errorf("the task stream holds %d messages after the cancel; want the cancelled one removed", info.State.Msgs)
	}
}
