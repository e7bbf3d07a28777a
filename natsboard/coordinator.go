package natsboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/work"
)

// Options configure a Coordinator.
type Options struct {
	// Replicas of the stream, bucket and object store (0: 1).
	Replicas int
	// MaxDeliveries bounds deliveries of one task message (0:
	// DefaultMaxDeliveries).
	MaxDeliveries int
	// ModelName maps the model string the workflow gives an agent to the
	// one the worker should use (fsd run --model overrides it); nil keeps
	// it.
	ModelName func(string) string
	// CancelGrace bounds the wait for a cancelled task's worker to report
	// (0: DefaultCancelGrace).
	CancelGrace time.Duration
	// Credentials besides those the URL may carry.
	Credentials Credentials
	// Key signs task messages and derives the secret each attempt's
	// outcome is MACed with (auth.go). Workers given the same key run
	// only tasks it signed; a resume needs the key the run started with
	// to accept outcomes committed meanwhile. nil: a random key, good for
	// this coordinator's life only.
	Key    []byte
	Logger zerolog.Logger
}

// Coordinator publishes a run's task attempts to the work queue and waits
// for their outcomes: the work.Dispatcher of `fsd run --nats`.
type Coordinator struct {
	res  *resources
	opts Options
	// jsp publishes task messages (publish) with the options pubOpts,
	// made once.
	jsp     jetstream.JetStream
	pubOpts []jetstream.PublishOpt
	// macs MAC task messages and derive outcome keys with opts.Key.
	macs *macPool

	// What Publish stored: skill id -> bundle, and the script.
	skills     map[string]skillRef
	script     string
	scriptName string

	mu      sync.Mutex
	watches map[string]*runWatch
	// lost: the server lost fsd's streams while this coordinator ran
	// (watchStore).
	lost     bool
	checking atomic.Bool
	closed   chan struct{}
	close    sync.Once
	// pooled: task subjects whose worker pool was looked for (warnNoPool).
	pooled map[string]bool
	// dropOutcomeEvents drops the events outcomes carry, as a server
	// that denies the workers fsd.events drops the others: a test's way
	// to lose every worker event.
	dropOutcomeEvents bool
}

type skillRef struct{ bundle, manifest string }

// Connect dials the NATS server at url and prepares the JetStream
// resources.
func Connect(ctx context.Context, url string, opts Options) (*Coordinator, error) {
	if opts.MaxDeliveries <= 0 {
		opts.MaxDeliveries = DefaultMaxDeliveries
	}
	if opts.CancelGrace <= 0 {
		opts.CancelGrace = DefaultCancelGrace
	}
	if len(opts.Key) == 0 {
		opts.Key = NewKey()
	}
	res, err := connect(ctx, url, dialing{name: "fsd run", replicas: opts.Replicas, log: opts.Logger, creds: opts.Credentials})
	if err != nil {
		return nil, err
	}
	for _, w := range res.warnings {
		opts.Logger.Warn().Msg(w)
	}
	// The library's own timeout of an ack only frees the message's place
	// among those in flight: publish stops waiting at attemptWait.
	jsp, err := jetstream.New(res.nc, jetstream.WithPublishAsyncMaxPending(maxPublishing), jetstream.WithPublishAsyncTimeout(2*attemptWait))
	if err != nil {
		res.Close()
		return nil, err
	}
	c := &Coordinator{res: res, opts: opts, jsp: jsp, pubOpts: []jetstream.PublishOpt{jetstream.WithStallWait(attemptWait)}, macs: newMACPool(opts.Key), skills: map[string]skillRef{}, watches: map[string]*runWatch{}, closed: make(chan struct{}), pooled: map[string]bool{}}
	c.watchStore(ctx)
	return c, nil
}

// Close stops watching results and closes the connection.
func (c *Coordinator) Close() {
	c.close.Do(func() { close(c.closed) })
	c.mu.Lock()
	for _, w := range c.watches {
		w.stop()
	}
	c.watches = map[string]*runWatch{}
	c.mu.Unlock()
	c.res.Close()
}

// Publish stores every skill of the project that has a folder, and the
// scripted model's script, in the object store. Files already there (by
// digest) are not sent again.
func (c *Coordinator) Publish(ctx context.Context, p *spec.Project) error {
	bundles := map[string]string{} // folder -> digest: skills sharing a folder share a bundle
	for _, s := range p.Skills {
		if s.File == "" || s.Dir == "" {
			continue // built in code: no folder to send
		}
		d, ok := bundles[s.Dir]
		if !ok {
			var err error
			if d, err = c.res.objs.publishBundle(ctx, s.Dir); err != nil {
				return fmt.Errorf("skill %s: %w", s.ID, err)
			}
			bundles[s.Dir] = d
		}
		rel, err := filepath.Rel(s.Dir, s.File)
		if err != nil || !filepath.IsLocal(rel) {
			return fmt.Errorf("skill %s: manifest %s is not inside its folder %s", s.ID, s.File, s.Dir)
		}
		c.skills[s.ID] = skillRef{bundle: d, manifest: filepath.ToSlash(rel)}
	}
	if wf := p.Workflow; wf != nil && wf.Script != "" {
		path := wf.ScriptPath()
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if c.script, err = c.res.objs.put(ctx, data); err != nil {
			return fmt.Errorf("publish %s: %w", path, err)
		}
		c.scriptName = filepath.Base(path)
	}
	return nil
}

// Dispatch publishes one task attempt and waits for its outcome. An
// outcome already committed (the attempt finished while a previous
// coordinator of the run was down) is returned without publishing; a
// message already on the queue for it is not published twice.
//
// When ctx ends because the board cancelled the task (its cause is
// board.ErrTaskCancelled), the worker running it is told to stop and the
// outcome says it was cancelled. When ctx ends for any other reason (the
// run was interrupted or timed out), Dispatch returns and the task goes
// on running on its worker: its outcome is committed for a resume.
//
// N4, N13, N14, N19: the message id is the attempt's key; only cancelTask
// reaches the worker; a message over max_payload fails at once; the outcome
// comes from the bucket, never from events. U9: the events an outcome
// carries follow those that came before it.
func (c *Coordinator) Dispatch(ctx context.Context, t *work.Attempt, events event.Sink, approvals work.Approver) (*work.Outcome, error) {
	w, err := c.watch(ctx, t.Run)
	if err != nil {
		return nil, err
	}
	key := ResultKey(t.Run, t.Task, t.Number)
	ready, seen := w.wait(key)
	defer w.forget(key, ready)
	if seen {
		out, err := c.outcome(ctx, key)
		if err != nil || out != nil {
			return out, err
		}
	}
	m := Message{V: WireVersion, Attempt: *t, Script: c.script, ScriptName: c.scriptName,
		Events: eventSubject + "." + key, MaxDeliveries: c.opts.MaxDeliveries}
	if approvals != nil {
		m.Approvals = approvalSubject + "." + key
	}
	if c.opts.ModelName != nil {
		m.Model = c.opts.ModelName(m.Model)
	}
	if t.Skill != "" {
		ref, ok := c.skills[t.Skill]
		if !ok {
			return nil, fmt.Errorf("skill %s has no folder to send to workers", t.Skill)
		}
		m.Bundle, m.Manifest = ref.bundle, ref.manifest
	}
	macs := c.macs.get()
	m.OutcomeKey = outcomeKeyWith(macs, key)
	data, err := signedMessage(macs, &m)
	c.macs.put(macs)
	if err != nil {
		return nil, err
	}
	// The run's events subscription was made before this publish: the
	// server sees the interest before any worker can report.
	eventsDone := func() {}
	if events != nil {
		eventsDone = w.events.add(m.Events, t.Run, t.Task, events)
		defer func() { eventsDone() }()
	}
	if approvals != nil {
		defer w.approvals.add(ctx, m.Approvals, approvals)()
	}
	// Errors do not name the task: the board says which task failed.
	subject := taskSubject(t.Skill, t.Agent)
	msg := &nats.Msg{Subject: subject, Data: data, Header: traceHeader(ctx)}
	var seq uint64 // the message's sequence in the task stream
	err = keepTryingLog(ctx, func() zerolog.Logger { return c.opts.Logger.With().Str("task", t.Task).Logger() }, "publish the task to NATS", func() (err error) {
		seq, err = c.publish(ctx, msg, key)
		return err
	})
	if err != nil && errors.Is(context.Cause(ctx), board.ErrTaskCancelled) {
		// The message may have reached the queue all the same.
		return c.stop(key, ready, w, msg, 0), nil
	}
	if errors.Is(err, nats.ErrMaxPayload) {
		return nil, fmt.Errorf("its message is %d bytes, over the NATS server's max_payload (%d): raise max_payload in the server's configuration", len(data), c.res.nc.MaxPayload())
	}
	if err != nil {
		return nil, fmt.Errorf("publishing it to NATS: %w", err)
	}
	c.warnNoPool(subject)
	select {
	case out := <-ready:
		if events != nil && len(out.Events) > 0 && !c.dropOutcomeEvents {
			// Its last events follow those it sent before.
			eventsDone()
			eventsDone = func() {}
			emitEvents(attemptSink{run: t.Run, task: t.Task, sink: events}, out.Events)
		}
		return &out.Outcome, nil
	case <-ctx.Done():
		if errors.Is(context.Cause(ctx), board.ErrTaskCancelled) {
			return c.stop(key, ready, w, msg, seq), nil
		}
		return nil, ctx.Err()
	case <-w.done:
		return nil, fmt.Errorf("watching results: %w", w.err)
	}
}

// maxPublishing bounds the task messages a coordinator has published and
// not yet seen acknowledged by the stream; a Dispatch past it waits for
// one (jetstream's PublishAsyncMaxPending).
const maxPublishing = 1024

// publish publishes a task message with message id key and waits for the
// stream's acknowledgement, which gives the message's sequence in the
// stream (its first copy's, for a copy dropped as a duplicate). The publish is asynchronous: the message goes
// out with those of the tasks dispatched at the same moment, in one write
// and one flush, and the acks come back on one subscription instead of a
// reply inbox per task. An attempt waits attemptWait at most: a lost
// acknowledgement is not waited on until the run ends (its --timeout);
// the publish is then made again, and the stream drops a second copy by
// its message id.
//
// The message id is the header jetstream.WithMsgID would set, set on msg
// once rather than by an option made and applied on every publish.
//
// U2: bounded in flight, made again under its message id.
func (c *Coordinator) publish(ctx context.Context, msg *nats.Msg, key string) (seq uint64, err error) {
	if id := msg.Header[jetstream.MsgIDHeader]; len(id) != 1 || id[0] != key {
		if msg.Header == nil {
			msg.Header = nats.Header{}
		}
		msg.Header[jetstream.MsgIDHeader] = []string{key}
	}
	f, err := c.jsp.PublishMsgAsync(msg, c.pubOpts...)
	if errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
		return 0, fmt.Errorf("%w: %w", nats.ErrTimeout, err) // tried again, as a lost ack is
	}
	if err != nil {
		return 0, err
	}
	t := ackTimers.Get().(*time.Timer)
	t.Reset(attemptWait)
	defer func() {
		t.Stop() // nothing is received from it after Stop: it can be reset for another publish
		ackTimers.Put(t)
	}()
	select {
	case ack := <-f.Ok():
		return ack.Sequence, nil
	case err := <-f.Err():
		if errors.Is(err, jetstream.ErrAsyncPublishTimeout) {
			return 0, fmt.Errorf("%w: %w", nats.ErrTimeout, err)
		}
		return 0, err
	case <-t.C:
		return 0, fmt.Errorf("the stream's acknowledgement: %w", nats.ErrTimeout)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// ackTimers are the stopped timers publish waits for acks with: one made
// per task message costs three allocations.
var ackTimers = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// keepTrying calls f until it succeeds, fails for good or ctx ends: the
// coordinator's requests that are safe to repeat and that its run cannot
// go on without (publishing a task, whose message id makes a second copy
// a duplicate the stream drops; watching a run's results). A coordinator
// cut off from NATS, however long, then goes on once it is back, as its
// tasks waiting for outcomes do. After 5 s it says so once ("cannot
// what"), and again when f got through.
//
// N8: a task's publish waits out a partition instead of failing the task.
func keepTrying(ctx context.Context, log zerolog.Logger, what string, f func() error) error {
	return keepTryingLog(ctx, func() zerolog.Logger { return log }, what, f)
}

// keepTryingLog is keepTrying with the logger made only when there is
// something to say: a logger with a field of its own costs an allocation
// of half a kilobyte, which a task's publish would pay every time.
func keepTryingLog(ctx context.Context, logger func() zerolog.Logger, what string, f func() error) error {
	start, warned := time.Now(), false
	var log zerolog.Logger
	for i := 1; ; i++ {
		err := f()
		if err == nil && warned {
			log.Warn().Msgf("could %s after all", what)
		}
		if err == nil || !transient(err) || ctx.Err() != nil {
			return err
		}
		if !warned && time.Since(start) >= 5*time.Second {
			warned, log = true, logger()
			log.Warn().Err(err).Msgf("cannot %s for now; trying again until it can (Ctrl-C or --timeout ends the run)", what)
		}
		sleep(ctx, min(time.Duration(i)*100*time.Millisecond, time.Second))
	}
}

// runWatch follows the outcomes of one run's attempts.
type runWatch struct {
	c    *Coordinator
	run  string
	done chan struct{}
	quit chan struct{} // stop
	err  error
	// stream is the bucket's stream, for guard.
	stream jetstream.Stream
	// events are the run's worker events; approvals serves its workers'
	// approval requests.
	events    *runEvents
	approvals *runApprovals

	mu sync.Mutex
	w  jetstream.KeyWatcher // the current watch (restart)
	// last is the highest revision the watch delivered; restarts count
	// the watches restart started.
	last     uint64
	restarts int
	waiters  map[string]chan *Outcome
	// seen are the keys whose outcome came while no Dispatch waited for
	// it: those a resumed coordinator's watch reads, most of them tasks
	// its record holds already. Only the key is kept (a run's results and
	// transcripts would stay in memory for its life); a Dispatch that
	// asks for one reads it from the bucket.
	seen map[string]bool
}

// watch returns the run's watch, starting it (and reading every outcome
// already committed) on first use.
func (c *Coordinator) watch(ctx context.Context, run string) (*runWatch, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w, ok := c.watches[run]; ok {
		return w, nil
	}
	if c.lost {
		return nil, fmt.Errorf("watch results of run %s: %w", run, errStoreLost)
	}
	var kw jetstream.KeyWatcher
	err := keepTrying(ctx, c.opts.Logger.With().Str("run", run).Logger(), "watch the run's results in NATS", func() error {
		var err error
		kw, err = c.res.results.Watch(context.Background(), token(run)+".>")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("watch results of run %s: %w", run, err)
	}
	events, err := followEvents(c.res.nc, run)
	if err != nil {
		_ = kw.Stop()
		return nil, err
	}
	approvals, err := c.followApprovals(run)
	if err != nil {
		_ = kw.Stop()
		events.stop()
		return nil, err
	}
	w := &runWatch{w: kw, c: c, run: run, events: events, approvals: approvals, done: make(chan struct{}), quit: make(chan struct{}), seen: map[string]bool{}, waiters: map[string]chan *Outcome{}}
	initial := make(chan struct{})
	go w.follow(kw, initial)
	select {
	case <-initial:
	case <-w.done:
		events.stop()
		approvals.stop()
		return nil, fmt.Errorf("watch results of run %s: %w", run, w.err)
	case <-ctx.Done():
		_ = kw.Stop()
		events.stop()
		approvals.stop()
		return nil, ctx.Err()
	}
	c.watches[run] = w
	go w.guard()
	return w, nil
}

func (w *runWatch) follow(kw jetstream.KeyWatcher, initial chan struct{}) {
	for e := range kw.Updates() {
		if e == nil { // every outcome committed before the watch has arrived
			if initial != nil {
				close(initial)
				initial = nil
			}
			continue
		}
		w.mu.Lock()
		w.last = max(w.last, e.Revision())
		w.mu.Unlock()
		if e.Operation() == jetstream.KeyValuePut {
			w.deliver(e.Key(), e.Value())
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.w != kw { // restart replaced it
		return
	}
	// The watch ends when the bucket's stream is gone: the tasks queued
	// and the outcomes committed went with it.
	w.err = errStoreLost
	close(w.done)
}

// watchProbe is how often guard compares the watch with the bucket.
var watchProbe = 2 * time.Second

// guard restarts a watch that fell behind. The watch is an ordered
// consumer on one server of a cluster; when that server goes down, the
// client library notices only from missing heartbeats (5 s apart, checked
// every 10 s) and re-creates the consumer 10 to 20 s later, while the
// outcomes committed meanwhile wait. So while a Dispatch waits, guard
// reads the revision of the run's latest outcome in the bucket every
// watchProbe; one the watch has not delivered by the next look has it
// re-created from its last revision on.
//
// N16: a watch that has fallen behind the bucket is started again.
func (w *runWatch) guard() {
	t := time.NewTicker(watchProbe)
	defer t.Stop()
	var behind uint64 // the bucket's revision the watch had not reached at the last look
	for {
		select {
		case <-t.C:
		case <-w.quit:
			return
		case <-w.done:
			return
		}
		w.mu.Lock()
		idle, last := len(w.waiters) == 0, w.last
		w.mu.Unlock()
		if idle {
			behind = 0
			continue
		}
		if behind > last {
			w.restart(last)
			behind = 0
			continue
		}
		behind = 0
		if rev, err := w.latest(); err == nil && rev > last {
			behind = rev
		}
	}
}

// latest is the revision of the run's latest outcome in the bucket (0:
// none). The stream is looked up once (guard alone uses it).
func (w *runWatch) latest() (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), attemptWait)
	defer cancel()
	if w.stream == nil {
		s, err := w.c.res.js.Stream(ctx, "KV_"+ResultsBucket)
		if err != nil {
			return 0, err
		}
		w.stream = s
	}
	m, err := w.stream.GetLastMsgForSubject(ctx, "$KV."+ResultsBucket+"."+token(w.run)+".>")
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return m.Sequence, nil
}

// restart replaces the watch by one that delivers every change after
// revision last. An outcome both deliver is noted as seen the second time.
func (w *runWatch) restart(last uint64) {
	kw, err := w.c.res.results.Watch(context.Background(), token(w.run)+".>", jetstream.IncludeHistory(), jetstream.ResumeFromRevision(last+1))
	if err != nil {
		return // the next looks try again
	}
	w.mu.Lock()
	select {
	case <-w.quit:
		w.mu.Unlock()
		_ = kw.Stop()
		return
	default:
	}
	old := w.w
	w.w = kw
	w.restarts++
	w.mu.Unlock()
	w.c.opts.Logger.Debug().Str("run", w.run).Uint64("revision", last).Msg("the results watch fell behind the bucket: watching again from its last revision")
	go w.follow(kw, nil)
	go func() { _ = old.Stop() }()
}

var errStoreLost = fmt.Errorf("the watch of bucket %s stopped: was it removed, or the NATS server restarted without its store? This run's queued tasks and outcomes are then lost: run it again", ResultsBucket)

// deliver hands an outcome to the Dispatch waiting for it, or notes that
// it came.
//
// N21: an outcome that came before its Dispatch is noted by key only.
func (w *runWatch) deliver(key string, value []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch, ok := w.waiters[key]
	if !ok {
		w.seen[key] = true
		return
	}
	ch <- w.c.decodeOutcome(key, value)
	delete(w.waiters, key)
}

// decodeOutcome reads a committed outcome; one that cannot be read, or
// that is not authenticated by the attempt's outcome key, fails its task
// saying so (it is committed: nothing else will come).
//
// N20: never a wait for good. N25: an outcome counts only with its MAC.
func (c *Coordinator) decodeOutcome(key string, value []byte) *Outcome {
	var out Outcome
	if err := c.checkOutcome(key, value); err != nil {
		c.opts.Logger.Warn().Str("key", key).Err(err).Msg("refused an outcome that is not authenticated")
		return &Outcome{V: WireVersion, Outcome: work.Outcome{Error: refusedOutcome(key, err)}}
	}
	if err := unmarshalOutcome(value, &out); err != nil {
		out = Outcome{V: WireVersion, Outcome: work.Outcome{Error: fmt.Sprintf("its outcome %s in bucket %s is not readable: %v", key, ResultsBucket, err)}}
	}
	return &out
}

// wait returns a channel that receives the outcome of key. seen: it came
// already, and the bucket holds it.
func (w *runWatch) wait(key string) (ready chan *Outcome, seen bool) {
	ch := readyChans.Get().(chan *Outcome)
	w.mu.Lock()
	defer w.mu.Unlock()
	seen = w.seen[key]
	delete(w.seen, key)
	w.waiters[key] = ch
	return ch, seen
}

// forget drops the wait for key with ready, which wait returned: the
// Dispatch that waited returned.
func (w *runWatch) forget(key string, ready chan *Outcome) {
	w.mu.Lock()
	if w.waiters[key] == ready {
		delete(w.waiters, key)
	}
	w.mu.Unlock()
	// No outcome is sent on it now (deliver sends under w.mu to the
	// waiters only): emptied, it serves another wait.
	select {
	case <-ready:
	default:
	}
	readyChans.Put(ready)
}

// readyChans are the channels of waits that ended (wait, forget).
var readyChans = sync.Pool{New: func() any { return make(chan *Outcome, 1) }}

// outcome reads a committed outcome from the bucket; nil when it is gone
// (expired, or purged by hand): the attempt is then run again.
func (c *Coordinator) outcome(ctx context.Context, key string) (*work.Outcome, error) {
	var e jetstream.KeyValueEntry
	err := retry(ctx, func(ctx context.Context) (err error) {
		e, err = c.res.results.Get(ctx, key)
		return err
	})
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read outcome %s: %w", key, err)
	}
	return &c.decodeOutcome(key, e.Value()).Outcome, nil
}

func (w *runWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.quit:
	default:
		close(w.quit)
	}
	_ = w.w.Stop()
	w.events.stop()
	w.approvals.stop()
}

// AttemptLog reads one attempt's transcript from the attempt log (the
// journal stream), as the latest delivery that ran it wrote it: the
// engine copies it into the coordinator's run record (work.LogReader).
func (c *Coordinator) AttemptLog(ctx context.Context, run, task string, attempt int) ([]json.RawMessage, error) {
	v, err := readJournal(ctx, c.res.journal, run, task, attempt)
	if err != nil {
		return nil, err
	}
	return v.entries, nil
}
