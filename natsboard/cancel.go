package natsboard

// Cancelling a task that runs on a worker (cancelTask on the coordinator's
// board). Only a cancel reaches workers: a coordinator that stops for any
// other reason (an interrupt, the run's --timeout, a crash) leaves its
// tasks running, and a resume picks their outcomes up.

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fsdrun/fsd/work"
)

const cancelSubject = "fsd.cancel"

// DefaultCancelGrace is how long a coordinator waits for the outcome of a
// cancelled task from the worker running it before it commits the
// cancellation itself.
const DefaultCancelGrace = 10 * time.Second

// errCancelled is the cause a worker cancels a task's context with when
// its coordinator cancelled the task.
var errCancelled = errors.New("cancelled on the coordinator (cancelTask)")

// errSuperseded is the cause a worker cancels a task's context with when
// the attempt's outcome was committed while it ran.
var errSuperseded = errors.New("the attempt's outcome was committed elsewhere")

// cancelledMessage is the error of an attempt cancelled before any
// worker ran it, or whose worker did not answer the cancel.
const cancelledMessage = "cancelled on the coordinator (cancelTask) before a worker reported on it"

// cancelsSubject is where the cancel of an attempt is asked for.
func cancelsSubject(key string) string { return cancelSubject + "." + key }

// stop cancels an attempt on the worker running it. The worker answers
// the request at once, stops the task and commits an outcome saying it
// was cancelled, which stop waits for (at most CancelGrace). When no
// worker runs the attempt (its message is still queued) or none answers
// in time, stop commits that outcome itself: a later delivery finds it
// and is dropped, and a late worker's own outcome is discarded.
//
// N3, N13: the coordinator's cancellation is committed with the same
// create-only write.
func (c *Coordinator) stop(key string, ready <-chan *Outcome, w *runWatch) *work.Outcome {
	log := c.opts.Logger.With().Str("attempt", key).Logger()
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.CancelGrace)
	defer cancel()
	_, err := c.res.nc.RequestWithContext(ctx, cancelsSubject(key), nil)
	if err == nil {
		select {
		case out := <-ready:
			return &out.Outcome
		case <-w.done:
		case <-ctx.Done():
			log.Warn().Msg("the worker running a cancelled task did not report in time; the cancellation is committed here")
		}
	} else if !errors.Is(err, nats.ErrNoResponders) {
		log.Debug().Err(err).Msg("no worker answered the cancel")
	}
	data, _ := json.Marshal(Outcome{V: WireVersion, Outcome: work.Outcome{Error: cancelledMessage}})
	data = signOutcome(data, outcomeKey(c.opts.Key, key), key)
	cctx, ccancel := context.WithTimeout(context.Background(), c.opts.CancelGrace)
	defer ccancel()
	if _, err := c.res.results.Create(cctx, key, data); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		log.Warn().Err(err).Msg("could not commit the cancellation; a worker may still run the task")
	}
	// The first commit is the outcome: the worker's, when it came first.
	select {
	case out := <-ready:
		return &out.Outcome
	case <-cctx.Done():
		return &work.Outcome{Error: cancelledMessage}
	}
}

// running is a worker's tasks in progress, by outcome key, so a cancel
// from the coordinator finds the task's context.
type running struct {
	mu    sync.Mutex
	tasks map[string]context.CancelCauseFunc
}

// add registers a task; the returned func unregisters it.
func (r *running) add(key string, cancel context.CancelCauseFunc) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tasks == nil {
		r.tasks = map[string]context.CancelCauseFunc{}
	}
	r.tasks[key] = cancel
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.tasks, key)
	}
}

// listen answers cancel requests for the tasks this worker runs; a
// request for a task it does not run gets no answer.
//
// N13: cancelTask, and nothing else, stops a worker's attempt.
func (w *Worker) listen() (*nats.Subscription, error) {
	return w.res.nc.Subscribe(cancelSubject+".>", func(msg *nats.Msg) {
		key := strings.TrimPrefix(msg.Subject, cancelSubject+".")
		w.running.mu.Lock()
		cancel, ok := w.running.tasks[key]
		w.running.mu.Unlock()
		if !ok {
			return
		}
		cancel(errCancelled)
		_ = msg.Respond(nil)
	})
}
