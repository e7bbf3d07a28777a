package natsboard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// PoolIdle is how long a worker pool's queue (its durable consumer on
// FSD_TASKS) outlives the pool's last worker. The server then removes it,
// so a pool whose --agents overlap it may start: without it a pool
// stopped yesterday would refuse every overlapping pool for good. A
// consumer with tasks in progress is kept while their heartbeats go on.
const PoolIdle = time.Minute // poolError says "a minute"

// openQueue looks up the worker pool's consumer, creating it when missing.
func openQueue(ctx context.Context, res *resources, opts WorkerOptions) (jetstream.Consumer, error) {
	name := consumerName(opts.Agents)
	cons, err := ensure(ctx, func() (jetstream.Consumer, error) { return res.tasks.Consumer(ctx, name) },
		func() (jetstream.Consumer, error) {
			return res.tasks.CreateConsumer(ctx, jetstream.ConsumerConfig{
				Durable:       name,
				Description:   "fsd workers taking " + opts.Agents,
				FilterSubject: taskSubjects + "." + opts.Agents,
				AckPolicy:     jetstream.AckExplicitPolicy,
				AckWait:       opts.AckWait,
				// Unbounded here: the worker that gets a delivery past the
				// message's own bound fails the attempt softly (see handle).
				MaxDeliver:        -1,
				MaxAckPending:     -1,
				InactiveThreshold: PoolIdle,
			})
		}, jetstream.ErrConsumerNotFound, jetstream.ErrConsumerExists)
	if err != nil {
		return nil, poolError(ctx, res, opts.Agents, err)
	}
	return cons, nil
}

// errConsumerNotUnique is JetStream's refusal of a work-queue consumer
// whose filter overlaps another's.
const errConsumerNotUnique jetstream.ErrorCode = 10100

// poolError explains a refused consumer: for an overlap, which pools it
// overlaps and how one that has stopped goes away.
func poolError(ctx context.Context, res *resources, agents string, err error) error {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != errConsumerNotUnique {
		return fmt.Errorf("consumer for agents %q: %w", agents, err)
	}
	var pools []string
	lister := res.tasks.ListConsumers(ctx)
	for ci := range lister.Info() {
		if strings.HasPrefix(ci.Name, "fsd-workers") {
			pools = append(pools, fmt.Sprintf("%s (consumer %s)", strings.TrimPrefix(ci.Config.FilterSubject, taskSubjects+"."), ci.Name))
		}
	}
	others := "another pool"
	if len(pools) > 0 {
		others = "the pools taking " + strings.Join(pools, ", ")
	}
	return fmt.Errorf("--agents %q overlaps %s: work-queue consumers of one NATS system must not overlap; give every worker pool a disjoint --agents. A pool's queue goes away a minute after its last worker stops (at once: nats consumer rm %s CONSUMER)",
		agents, others, TaskStream)
}

// reopenQueue is called after taking a task failed. When the pool's
// consumer, or fsd's streams and buckets, are gone (the server restarted
// without its store, an operator removed them, the pool's workers were
// all cut off longer than PoolIdle) it creates them again, so the worker
// takes the next run's tasks instead of failing every fetch for good.
func (w *Worker) reopenQueue(ctx context.Context) {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := w.res.tasks.Consumer(ctx, consumerName(w.opts.Agents))
	if !errors.Is(err, jetstream.ErrConsumerNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return
	}
	replicas := w.opts.Replicas
	if replicas <= 0 {
		replicas = defaultReplicas(w.res.nc)
	}
	// A fresh resources value: the worker's own handles name the same
	// streams and keep working once they exist again, and tasks running
	// now read them without a lock.
	if err := (&resources{nc: w.res.nc}).setup(ctx, replicas); err != nil {
		w.opts.Logger.Warn().Err(err).Msg("fsd's JetStream resources are gone and could not be created again")
		return
	}
	cons, err := openQueue(ctx, w.res, w.opts)
	if err != nil {
		w.opts.Logger.Warn().Err(err).Msg("the task queue is gone and could not be created again")
		return
	}
	w.cons = cons
	w.opts.Logger.Warn().Str("agents", w.opts.Agents).
		Msg("the task queue was gone (the NATS server lost its store, or it was removed): created it again")
}

// queue is the consumer the worker takes tasks from.
func (w *Worker) queue() jetstream.Consumer {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	return w.cons
}
