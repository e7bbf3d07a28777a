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

// stop cancels an attempt on the worker running it. It first takes the
// attempt's message (msg, at sequence seq in the task stream; 0: not
// known) off the queue, so that no worker is handed it after the cancel
// (workers run a first delivery without looking for an outcome, U11).
// Then it asks the workers: the one running the attempt answers at once,
// stops the task and commits an outcome saying it was cancelled, which
// stop waits for (at most CancelGrace); the others keep the cancel, in
// case the message is on its way to them. When no worker answers in
// time, stop commits that outcome itself: a late worker's own outcome is
// discarded.
//
// N3, N13: the coordinator's cancellation is committed with the same
// create-only write.
func (c *Coordinator) stop(key string, ready <-chan *Outcome, w *runWatch, msg *nats.Msg, seq uint64) *work.Outcome {
	log := c.opts.Logger.With().Str("attempt", key).Logger()
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.CancelGrace)
	defer cancel()
	if err := c.unqueue(ctx, msg, key, seq); err != nil {
		log.Warn().Err(err).Msg("could not take the cancelled task's message off the queue; a worker may still run it")
	}
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

// unqueue removes a cancelled attempt's message from the task stream.
// When its sequence is not known (the cancel came while it was being
// published), the message is published again under its message id: the
// stream answers with the sequence of the copy it holds, or stores this
// one, which goes at once. A message taken and acked already is gone.
func (c *Coordinator) unqueue(ctx context.Context, msg *nats.Msg, key string, seq uint64) error {
	if seq == 0 {
		var err error
		if seq, err = c.publish(ctx, msg, key); err != nil {
			return err
		}
	}
	// Only the attempt's own message: a stream made again (its server
	// lost its store) numbers other messages from 1.
	m, err := c.res.tasks.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil // taken and acked already
	}
	if err != nil {
		return err
	}
	if m.Header.Get(jetstream.MsgIDHeader) != key {
		return nil
	}
	err = c.res.tasks.DeleteMsg(ctx, seq)
	if err != nil && !errors.Is(err, jetstream.ErrMsgDeleteUnsuccessful) {
		return err
	}
	return nil
}

// running is a worker's tasks in progress, by outcome key, so a cancel
// from the coordinator finds the task's context, and the attempts whose
// cancel the worker heard while it did not run them.
type running struct {
	mu    sync.Mutex
	tasks map[string]context.CancelCauseFunc
	// heard are cancelled attempts this worker did not run when their
	// cancel came, oldest first, at most maxHeard: a delivery of one that
	// was on its way is refused (add).
	heard     map[string]bool
	heardList []string
}

// maxHeard bounds the cancels a worker keeps: only a cancel that crossed
// its message's delivery needs keeping, and cancels are rare.
const maxHeard = 4096

// add registers a task until remove. cancelled: its cancel came before,
// and it must not run.
func (r *running) add(key string, cancel context.CancelCauseFunc) (cancelled bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tasks == nil {
		r.tasks = map[string]context.CancelCauseFunc{}
	}
	r.tasks[key] = cancel
	return r.heard[key]
}

// remove unregisters the task key.
func (r *running) remove(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.tasks, key)
}

// cancel cancels the task key if it runs here and reports whether it
// did; otherwise it keeps key among the cancels heard.
func (r *running) cancel(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cancel, ok := r.tasks[key]; ok {
		cancel(errCancelled)
		return true
	}
	if r.heard == nil {
		r.heard = map[string]bool{}
	}
	if !r.heard[key] {
		if len(r.heardList) >= maxHeard {
			delete(r.heard, r.heardList[0])
			r.heardList = r.heardList[1:]
		}
		r.heard[key] = true
		r.heardList = append(r.heardList, key)
	}
	return false
}

// listen answers cancel requests for the tasks this worker runs; a
// request for a task it does not run gets no answer, and is kept in
// case its message is on its way to this worker.
//
// N13: cancelTask, and nothing else, stops a worker's attempt.
func (w *Worker) listen() (*nats.Subscription, error) {
	return w.res.nc.Subscribe(cancelSubject+".>", func(msg *nats.Msg) {
		if w.running.cancel(strings.TrimPrefix(msg.Subject, cancelSubject+".")) {
			_ = msg.Respond(nil)
		}
	})
}
