package natsboard

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// staleCheck is how long a pool's consumer must show no worker (no pull
// request waiting, no task delivered and unacked) before a worker whose
// --agents overlap it removes it. Idle workers renew a pull request at
// least every pullRenew (half the ack wait when that is shorter), so a
// pool with a live worker shows one.
const staleCheck = 3 * time.Second

// openQueue looks up the worker pool's consumer, creating it when missing.
func openQueue(ctx context.Context, res *resources, opts WorkerOptions) (jetstream.Consumer, error) {
	name := consumerName(opts.Agents)
	cons, err := ensure(ctx, func() (jetstream.Consumer, error) { return res.tasks.Consumer(ctx, name) },
		func() (jetstream.Consumer, error) {
			return res.tasks.CreateConsumer(ctx, jetstream.ConsumerConfig{
				Durable:       name,
				Description:   "fsd workers taking " + showAgents(opts.Agents),
				FilterSubject: taskSubjects + "." + opts.Agents,
				AckPolicy:     jetstream.AckExplicitPolicy,
				AckWait:       opts.AckWait,
				// Unbounded here: the worker that gets a delivery past the
				// message's own bound fails the attempt softly (see handle).
				MaxDeliver:    -1,
				MaxAckPending: -1,
			})
		}, jetstream.ErrConsumerNotFound, jetstream.ErrConsumerExists)
	if err != nil && notUnique(err) && removeStalePools(ctx, res, opts) > 0 {
		return openQueue(ctx, res, opts)
	}
	if err != nil {
		return nil, poolError(ctx, res, opts.Agents, err)
	}
	return cons, nil
}

func notUnique(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == errConsumerNotUnique
}

// removeStalePools removes the consumers of fsd worker pools whose
// --agents overlap opts.Agents and that no worker serves: no pull request
// waiting and no task delivered and unacked, at every look over
// staleCheck (stale). A pool stopped for good would otherwise refuse
// every overlapping pool until an operator removed its consumer by hand.
// A consumer with a task in flight is kept: its redelivery numbers fence
// the task's journal. It returns how many it removed.
//
// N18: only pools that are stale at every look are removed.
func removeStalePools(ctx context.Context, res *resources, opts WorkerOptions) int {
	idle := func() map[string]string {
		out := map[string]string{}
		lister := res.tasks.ListConsumers(ctx)
		for ci := range lister.Info() {
			pattern := strings.TrimPrefix(ci.Config.FilterSubject, taskSubjects+".")
			if strings.HasPrefix(ci.Name, "fsd-workers") && ci.Name != consumerName(opts.Agents) &&
				subjectsCollide(pattern, opts.Agents) && ci.NumWaiting == 0 && ci.NumAckPending == 0 {
				out[ci.Name] = pattern
			}
		}
		if lister.Err() != nil {
			return nil
		}
		return out
	}
	n := 0
	looks, every := staleSchedule()
	for name, pattern := range stale(ctx, looks, every, idle) {
		if err := res.js.DeleteConsumer(ctx, TaskStream, name); err == nil {
			n++
			opts.Logger.Warn().Str("agents", showAgents(pattern)).Str("consumer", name).
				Msg("removed the queue of a stopped worker pool whose --agents overlap this one's (no worker served it)")
		}
	}
	return n
}

// staleLooks is how many times stale looks, over staleCheck: half a second
// apart, so a live pool, whose workers renew their pull requests every
// two seconds with a gap of milliseconds between one and the next, shows
// one at some look. Two looks, the first and the last, could both fall in
// such gaps, and a live pool lost its queue.
const staleLooks = 7

// staleSchedule is how removeStalePools looks: staleLooks looks, every
// apart, the last staleCheck after the first.
func staleSchedule() (looks int, every time.Duration) {
	return staleLooks, staleCheck / (staleLooks - 1)
}

// stale returns the pools idle reports at each of looks looks, every
// apart (idle returns nil when it could not look: then none is stale).
func stale(ctx context.Context, looks int, every time.Duration, idle func() map[string]string) map[string]string {
	out := idle()
	for i := 1; i < looks && len(out) > 0; i++ {
		sleep(ctx, every)
		if ctx.Err() != nil {
			return nil
		}
		now := idle()
		for name := range out {
			if now[name] == "" {
				delete(out, name)
			}
		}
	}
	return out
}

// subjectsCollide tells whether two NATS subject patterns match a common
// subject ("*" one token, ">" one or more trailing tokens).
func subjectsCollide(a, b string) bool {
	x, y := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; ; i++ {
		if i == len(x) || i == len(y) {
			return len(x) == len(y)
		}
		if x[i] == ">" || y[i] == ">" {
			return true
		}
		if x[i] != "*" && y[i] != "*" && x[i] != y[i] {
			return false
		}
	}
}

// errConsumerNotUnique is JetStream's refusal of a work-queue consumer
// whose filter overlaps another's.
const errConsumerNotUnique jetstream.ErrorCode = 10100

// poolError explains a refused consumer: for an overlap, which pools it
// overlaps and how one that has stopped goes away.
func poolError(ctx context.Context, res *resources, agents string, err error) error {
	if !notUnique(err) {
		return fmt.Errorf("consumer for agents %q: %w", agents, err)
	}
	var pools []string
	lister := res.tasks.ListConsumers(ctx)
	for ci := range lister.Info() {
		if strings.HasPrefix(ci.Name, "fsd-workers") {
			pools = append(pools, fmt.Sprintf("%s (consumer %s)", showAgents(strings.TrimPrefix(ci.Config.FilterSubject, taskSubjects+".")), ci.Name))
		}
	}
	others := "another pool"
	if len(pools) > 0 {
		others = "the pools taking " + strings.Join(pools, ", ")
	}
	return fmt.Errorf("--agents %q overlaps %s: work-queue consumers of one NATS system must not overlap; give every worker pool a disjoint --agents (a stopped pool's queue is removed by the next overlapping worker once nothing is in flight on it; by hand: nats consumer rm %s CONSUMER)",
		showAgents(agents), others, TaskStream)
}

// removalGrace is how long a worker waits, once it finds its queue gone,
// before it creates fsd's resources again. nats-server tells a removed
// stream's consumers (their waiting fetches fail: "consumer deleted")
// before it has removed the stream's folder: a stream created again
// under the same name meanwhile loses its files to that removal, and
// from then on acknowledges no publish (the server logs "lmb missing")
// until the server restarts, so every run's tasks would wait forever.
const removalGrace = 3 * time.Second

// reopenQueue is called after taking a task failed. When the pool's
// consumer, or fsd's streams and buckets, are gone (the server restarted
// without its store, an operator or an overlapping pool removed them) it
// creates them again, so the worker takes the next run's tasks instead of
// failing every fetch for good.
//
// N15: a lost queue is made again.
func (w *Worker) reopenQueue(ctx context.Context) {
	// Every fetching slot fails alike: one of them looks, and at most
	// every few seconds (a server that is down would make each wait).
	// The others go on fetching meanwhile, and running tasks read the
	// queue (w.queue) without waiting for this look.
	if !w.reopenMu.TryLock() {
		return
	}
	defer w.reopenMu.Unlock()
	if time.Since(w.reopened) < 5*time.Second {
		return
	}
	defer func() { w.reopened = time.Now() }()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second+removalGrace)
	defer cancel()
	if !w.queueGone(ctx) {
		return
	}
	// Let a removal in progress finish first (removalGrace); a server that
	// lost its store has nothing to finish, and waits no more than that.
	sleep(ctx, removalGrace)
	if ctx.Err() != nil || !w.queueGone(ctx) {
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
	floor := queueFloor(ctx, w.res)
	w.qmu.Lock()
	w.cons, w.floor = cons, floor
	w.qmu.Unlock()
	w.opts.Logger.Warn().Str("agents", showAgents(w.opts.Agents)).
		Msg("the task queue was gone (the NATS server lost its store, or it was removed): created it again")
}

// queueGone tells whether the pool's consumer, or the task stream, is
// missing (not merely unreachable).
func (w *Worker) queueGone(ctx context.Context) bool {
	_, err := w.res.tasks.Consumer(ctx, consumerName(w.opts.Agents))
	return errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound)
}

// queueFloor is the task stream's last sequence, read once the worker's
// queue is open: a message after it was stored when the queue existed,
// so no earlier queue delivered it (olderThanQueue). When the stream
// does not answer, every message counts as older.
func queueFloor(ctx context.Context, res *resources) uint64 {
	info, err := res.tasks.Info(ctx)
	if err != nil {
		return math.MaxUint64
	}
	return info.State.LastSeq
}

// queue is the consumer the worker takes tasks from.
func (w *Worker) queue() jetstream.Consumer {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	return w.cons
}

// noPoolGrace is how long a task subject no pool takes must stay so before
// the coordinator says it: workers started with the run (fsd worker &, fsd
// run) create their pool within it.
const noPoolGrace = 5 * time.Second

// warnNoPool says, once per task subject, when no worker pool takes it: no
// fsd worker ever started on this NATS system, or every pool's --agents
// leaves it out. The task waits on the queue for a worker that starts
// later, which is right, but without a word the run looks stuck on a
// task shown as started.
func (c *Coordinator) warnNoPool(subject string) {
	c.mu.Lock()
	seen := c.pooled[subject]
	if !seen { // every task asks: only the first writes
		c.pooled[subject] = true
	}
	c.mu.Unlock()
	if seen {
		return
	}
	go func() {
		pools, taken := c.pools(subject)
		if taken {
			return
		}
		select {
		case <-c.closed:
			return
		case <-time.After(noPoolGrace):
		}
		if pools, taken = c.pools(subject); taken {
			return
		}
		now := "none"
		if len(pools) > 0 {
			now = strings.Join(pools, ", ")
		}
		agent := showAgents(strings.TrimPrefix(subject, taskSubjects+"."))
		c.opts.Logger.Warn().Msgf("no fsd worker pool takes %s tasks: they wait on the queue until a worker whose --agents matches %s starts (fsd worker --nats URL takes every task by default); pools now: %s",
			agent, agent, now)
	}()
}

// pools lists the --agents patterns of the worker pools on the task
// stream, and tells whether one takes subject. When it cannot tell (NATS
// fails), it says taken: a warning must not be wrong.
func (c *Coordinator) pools(subject string) (pools []string, taken bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lister := c.res.tasks.ListConsumers(ctx)
	for ci := range lister.Info() {
		if !strings.HasPrefix(ci.Name, "fsd-workers") {
			continue
		}
		pools = append(pools, showAgents(strings.TrimPrefix(ci.Config.FilterSubject, taskSubjects+".")))
		if subjectsCollide(ci.Config.FilterSubject, subject) {
			taken = true
		}
	}
	return pools, taken || lister.Err() != nil
}

// CheckAgents says what is wrong with a worker's --agents pattern: it must
// be a NATS subject pattern that can match a task's subject, SKILL.AGENT
// (">" any, "*" one token). A pattern that matches no task would make a
// pool that never gets one.
func CheckAgents(pattern string) error {
	bad := func(why string) error {
		return fmt.Errorf("--agents %q: want a subject pattern such as 'weekly-report.*' or '>'%s", pattern, why)
	}
	switch {
	case pattern == "":
		return bad("")
	case strings.ContainsAny(pattern, " \t\r\n"):
		return bad(" (no spaces)")
	}
	toks := strings.Split(pattern, ".")
	for i, t := range toks {
		switch {
		case t == "":
			return bad(" (an empty token)")
		case t == ">" && i != len(toks)-1:
			return bad(" ('>' only last)")
		}
	}
	last := toks[len(toks)-1]
	switch {
	case len(toks) == 1 && last != ">":
		return fmt.Errorf("--agents %q matches no task: a task's subject is SKILL.AGENT; did you mean '%s.*'?", pattern, last)
	case len(toks) > 2:
		return fmt.Errorf("--agents %q matches no task: a task's subject is SKILL.AGENT (two tokens)", pattern)
	}
	return nil
}

// subjectPattern is the --agents pattern as a filter over task subjects:
// each skill or agent name in it made a subject token as taskSubject makes
// it (a skill id in any script is encoded), wildcards kept.
func subjectPattern(agents string) string {
	toks := strings.Split(agents, ".")
	for i, t := range toks {
		if t != "*" && t != ">" {
			toks[i] = token(t)
		}
	}
	return strings.Join(toks, ".")
}

// showAgents is a filter or task subject (without the fsd.tasks prefix)
// as a person wrote it: encoded tokens decoded.
func showAgents(pattern string) string {
	toks := strings.Split(pattern, ".")
	for i, t := range toks {
		if enc, ok := strings.CutPrefix(t, "="); ok {
			if b, err := base64.RawURLEncoding.DecodeString(enc); err == nil {
				toks[i] = string(b)
			}
		}
	}
	return strings.Join(toks, ".")
}
