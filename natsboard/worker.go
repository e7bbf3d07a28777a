package natsboard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/work"
	"github.com/fsdrun/fsd/workspace"
)

// WorkerOptions configure a Worker.
type WorkerOptions struct {
	// Name names the worker in outcomes and logs (default: host-pid).
	Name string
	// Concurrency is how many tasks it runs at once (default 4).
	Concurrency int
	// Agents is the subject pattern of the agents it takes, over
	// SKILL.AGENT: "*.*" or ">" (the default) takes every task,
	// "weekly-report.*" one skill's agents, "_.worker" the default
	// worker's tasks. Workers with the same pattern share one queue;
	// patterns of one NATS system must not overlap (JetStream refuses
	// overlapping work-queue consumers).
	Agents string
	// AckWait is how long the worker may go without a heartbeat before
	// its task goes to another worker (default DefaultAckWait). Workers
	// sharing a pattern should agree on it.
	AckWait time.Duration
	// Trust are folders whose skills this worker trusts: a task's command
	// tools and stdio MCP servers run only when its skill's bundle is
	// byte for byte one of these folders' skills.
	Trust []string
	// CacheDir keeps fetched skills and scripts (default: the user cache
	// folder's fsd/worker).
	CacheDir string
	// Model builds the model named name; script is the path of the
	// scripted model's script ("" when the run has none).
	Model func(name, script string) (model.Model, error)
	// Work runs a task attempt (engine.Work): the transport delivers
	// attempts and outcomes, never runs a generator itself.
	Work work.Func
	// Replicas of the JetStream resources when this worker creates them.
	Replicas int
	// Credentials besides those the URL may carry.
	Credentials Credentials
	// SigningKey: when set, the worker runs only task messages signed
	// with it (the coordinator's Options.Key) and refuses others.
	SigningKey []byte
	// WaitForServer: NewWorker waits for a server that is not there yet
	// (until its ctx ends, saying so at every attempt) instead of failing;
	// the setup that follows is bounded by 30 s. Workers started with
	// their server, in any order, then all serve.
	WaitForServer bool
	Logger        zerolog.Logger
}

// Worker takes task messages from the work queue and runs them.
type Worker struct {
	res      *resources
	opts     WorkerOptions
	qmu      sync.Mutex // guards cons and floor, which reopenQueue replaces
	cons     jetstream.Consumer
	floor    uint64          // the task stream's last sequence when cons was opened (queueFloor)
	reopenMu sync.Mutex      // held by the one reopenQueue looking; guards reopened
	reopened time.Time       // when reopenQueue last looked
	trusted  map[string]bool // bundle digests of the --trust folders' skills
	// secrets are the NATS URL's credentials, masked in the attempts'
	// text with the keys of the worker's environment.
	secrets []string
	// host is this machine's name and pid this process's id, in outcomes
	// with the worker's.
	host string
	pid  int
	// refusal is what an attempt's untrusted command tool answers.
	refusal string

	mu     sync.Mutex
	models map[modelKey]model.Model
	skills memo[skillKey, *spec.Skill] // by bundle folder and manifest path (skill)
	// paths are the cache paths of the bundles and files fetched (fetched).
	paths memo[fetchKey, string]
	// running are the tasks in progress, for cancels from coordinators.
	running running
	// workspaces are the runs' workspaces the attempts opened.
	workspaces workspace.Cache

	// linger overrides how long an attempt keeps journal entries and
	// events nobody waits for before it sends them (0: journalLinger and
	// eventsLinger); tests make it long, so that only waits send them.
	linger time.Duration

	handedBack atomic.Int64 // tasks given back to the queue on stopping
	// fetchesOver is closed when Run's fetches have ended (set by Run).
	fetchesOver chan struct{}
}

// NewWorker connects to url, prepares the queue's consumer and reads the
// trusted folders.
func NewWorker(ctx context.Context, url string, opts WorkerOptions) (*Worker, error) {
	if opts.Work == nil {
		return nil, errors.New("natsboard: a worker needs WorkerOptions.Work, the function that runs an attempt (engine.Work)")
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	if opts.AckWait <= 0 {
		opts.AckWait = DefaultAckWait
	}
	if opts.Agents == "" {
		opts.Agents = ">"
	}
	if err := CheckAgents(opts.Agents); err != nil {
		return nil, err
	}
	// From here on, a filter over task subjects (showAgents for people).
	opts.Agents = subjectPattern(opts.Agents)
	opts.Name = WorkerName(opts.Name)
	if opts.CacheDir == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("no cache folder (pass --cache DIR): %w", err)
		}
		opts.CacheDir = filepath.Join(dir, "fsd", "worker")
	}
	if opts.Model == nil {
		return nil, errors.New("natsboard: a worker needs WorkerOptions.Model")
	}
	trusted, err := trustedBundles(opts.Trust)
	if err != nil {
		return nil, err
	}
	res, err := connect(ctx, url, dialing{name: "fsd worker " + opts.Name, replicas: opts.Replicas, log: opts.Logger,
		creds: opts.Credentials, wait: opts.WaitForServer})
	if err != nil {
		return nil, err
	}
	if opts.WaitForServer {
		// Only the wait for the server is unbounded.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, setupWait)
		defer cancel()
	}
	for _, w := range res.warnings {
		opts.Logger.Warn().Msg(w)
	}
	cons, err := openQueue(ctx, res, opts)
	if err != nil {
		res.Close()
		return nil, err
	}
	if wait := cons.CachedInfo().Config.AckWait; wait != opts.AckWait {
		opts.Logger.Warn().Dur("queue", wait).Dur("flag", opts.AckWait).
			Msg("the queue's ack wait, set by the worker that created it, differs from --ack-wait; heartbeats follow the queue's")
		opts.AckWait = wait
	}
	host, _ := os.Hostname()
	w := &Worker{res: res, opts: opts, cons: cons, floor: queueFloor(ctx, res), trusted: trusted, models: map[modelKey]model.Model{}, secrets: URLSecrets(url), host: host, pid: os.Getpid()}
	w.refusal = fmt.Sprintf("worker %s does not trust this skill to run commands. A worker runs the command tools and stdio MCP servers "+
		"of a skill only when the skill's files match a skill under one of its --trust folders; start it with --trust FOLDER holding this skill", opts.Name)
	if _, err := w.listen(); err != nil {
		res.Close()
		return nil, fmt.Errorf("subscribe to task cancels: %w", err)
	}
	return w, nil
}

// WorkerName is a worker's name: name, or "" for the default, host-pid.
func WorkerName(name string) string {
	if name != "" {
		return name
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

// consumerName is the durable consumer of an agents pattern: workers with
// the same pattern share it.
func consumerName(pattern string) string {
	if pattern == ">" {
		return "fsd-workers"
	}
	s := sha256.Sum256([]byte(pattern))
	return "fsd-workers-" + hex.EncodeToString(s[:6])
}

// trustedBundles digests the skill folders under the trusted roots.
//
// T5: what a worker trusts is content under its own --trust.
func trustedBundles(roots []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(roots) == 0 {
		return out, nil
	}
	for _, r := range roots {
		if _, err := os.Stat(r); err != nil {
			return nil, fmt.Errorf("--trust %w", err)
		}
	}
	skills, _ := spec.Discover(roots)
	seen := map[string]bool{}
	for _, s := range skills {
		if s == nil || s.Dir == "" || seen[s.Dir] {
			continue
		}
		seen[s.Dir] = true
		d, err := bundleDigest(s.Dir)
		if err != nil {
			return nil, fmt.Errorf("--trust: %w", err)
		}
		out[d] = true
	}
	return out, nil
}

// HandedBack is how many tasks the worker gave back to the queue because
// it was stopping (Run's ctx ended while they ran).
func (w *Worker) HandedBack() int { return int(w.handedBack.Load()) }

// Close closes the worker's connection.
func (w *Worker) Close() { w.res.Close() }

// Run takes and runs tasks until ctx ends. Tasks running then are
// cancelled and handed back to the queue.
func (w *Worker) Run(ctx context.Context) error {
	// A task waiting for approval gives its slot back (board.Park): the
	// worker takes other tasks meanwhile, and the waiting one takes a
	// slot again when its answer comes.
	slots := board.NewSlots(w.opts.Concurrency)
	var trouble fetchTrouble
	var wg, fetchers sync.WaitGroup
	w.fetchesOver = make(chan struct{})
	p, err := newPuller(w)
	if err != nil {
		return fmt.Errorf("subscribe to the task queue's deliveries: %w", err)
	}
	wg.Go(func() { p.run(ctx) })
	h := handlers{w: w, wg: &wg, idle: make(chan job), done: ctx.Done()}
	for range w.opts.Concurrency {
		fetchers.Add(1)
		wg.Go(func() {
			defer fetchers.Done()
			r := make(chan delivery, 1)
			for ctx.Err() == nil {
				tctx, release, ok := slots.Take(ctx)
				if !ok {
					return
				}
				d, ok := p.next(ctx, r)
				if !ok {
					release()
					return
				}
				if err := d.err; err != nil {
					release()
					if !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrNoMessages) && ctx.Err() == nil {
						trouble.failed(w.opts.Logger, err)
						w.reopenQueue(ctx)
						sleep(ctx, time.Second)
					}
					continue
				}
				trouble.over(w.opts.Logger)
				h.run(job{ctx: tctx, release: release, d: d})
			}
		})
	}
	go func() { fetchers.Wait(); close(w.fetchesOver) }()
	wg.Go(func() { w.watchQueue(ctx) })
	wg.Wait()
	return nil
}

// handlers run the deliveries, each on a goroutine an earlier delivery
// ran on when one is idle, a new one otherwise (while a task waits for
// approval its slot serves another, so there may be more than slots). A
// new goroutine per delivery grew its stack afresh for the engine's deep
// calls every time: 3 % of a task's CPU through NATS. Idle goroutines end
// with Run's ctx.
type handlers struct {
	w    *Worker
	wg   *sync.WaitGroup
	idle chan job
	done <-chan struct{}
}

// job is a delivery to handle in the slot's ctx, and the slot's release:
// a value, where a closure over them would cost an allocation a task.
type job struct {
	ctx     context.Context
	release func()
	d       delivery
}

// run runs j on an idle goroutine, or a new one.
func (h *handlers) run(j job) {
	select {
	case h.idle <- j:
	default:
		h.wg.Go(func() { h.loop(j) })
	}
}

func (h *handlers) loop(j job) {
	for {
		h.w.handle(j.ctx, j.d)
		j.release()
		select {
		case j = <-h.idle:
		case <-h.done:
			return
		}
	}
}

// queueProbe is how often a worker looks whether its queue is still there.
var queueProbe = 10 * time.Second

// watchQueue looks for the worker's queue each time its connection comes
// back and every queueProbe, and creates it again when it is gone
// (reopenQueue). Failed fetches alone do not tell: a server restarted
// without its store may answer an idle worker's pulls with nothing at all
// (nats-server 2.9 does), and the worker would wait for tasks on a queue
// that no longer exists while every run's tasks wait for a worker.
//
// N15: a lost queue is found by looking.
func (w *Worker) watchQueue(ctx context.Context) {
	back := w.res.nc.StatusChanged(nats.CONNECTED)
	defer w.res.nc.RemoveStatusListener(back)
	t := time.NewTicker(queueProbe)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-back:
		case <-t.C:
		}
		w.reopenQueue(ctx)
	}
}

// fetchTrouble says a failure to fetch tasks once while it lasts (every
// fetching goroutine meets it every second: a lost quorum or server would
// fill the log), and says when fetching works again.
type fetchTrouble struct {
	mu   sync.Mutex
	last string
}

func (t *fetchTrouble) failed(log zerolog.Logger, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := err.Error(); s != t.last {
		t.last = s
		log.Warn().Err(err).Msg("cannot fetch tasks; trying again every second")
		return
	}
	log.Debug().Err(err).Msg("cannot fetch tasks")
}

func (t *fetchTrouble) over(log zerolog.Logger) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last != "" {
		t.last = ""
		log.Info().Msg("fetching tasks again")
	}
}

// pullRenew is the longest an idle worker's pull request waits before
// the worker makes the next one: how often a pool with a live worker
// shows one to removeStalePools.
const pullRenew = 2 * time.Second

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// handle runs one delivery of a task message and commits its outcome.
//
// N3, N5, N8, N17: a committed key is acked unrun; the delivery past the
// bound fails softly; a NATS failure for now or the worker's stop hands the
// message back. U11: a first delivery does not look for a committed
// outcome unless it may have missed a cancel (mustLook).
func (w *Worker) handle(ctx context.Context, d delivery) {
	t := &taskRun{msg: d.msg}
	t.lease.start(d.asked, w.opts.AckWait)
	msg, l, m := d.msg, &t.lease, &t.m
	log := w.opts.Logger
	if err := unmarshalMessage(msg.Data(), m); err != nil || m.Task == "" {
		// Not a task message: no attempt to fail, and no worker will ever
		// read it.
		log.Error().Err(err).Str("subject", msg.Subject()).Msg("unreadable task message dropped")
		_ = msg.Term()
		return
	}
	log = log.Hook(taskFields{m})
	t.key = m.Key()
	key := t.key
	if m.V != WireVersion {
		// Sent by a coordinator of another fsd version: its task fails
		// saying so, rather than waiting for a worker that reads it.
		log.Error().Int("v", m.V).Msg("task message of another wire version failed")
		w.commit(ctx, t, &work.Outcome{Error: fmt.Sprintf("its task message is wire version %d, and worker %s reads version %d: run the same fsd version on the coordinator and every worker",
			m.V, w.opts.Name, WireVersion)}, log)
		return
	}
	if len(w.opts.SigningKey) > 0 {
		if err := checkTask(msg.Data(), w.opts.SigningKey); err != nil {
			// Not from a coordinator with this worker's key: never run.
			// The refusal is committed (MACed with the outcome key the
			// message names), so a coordinator whose key differs learns
			// why its task failed; a forger's run learns nothing it did
			// not write.
			log.Error().Err(err).Str("subject", msg.Subject()).Msg("task message refused: not signed with this worker's --signing-key")
			w.commit(ctx, t, &work.Outcome{Error: fmt.Sprintf("worker %s refused its task message: %v under the worker's --signing-key; give fsd run and every worker the same --signing-key FILE",
				w.opts.Name, err)}, log)
			return
		}
	}
	md, _ := metadataOf(msg, &t.md)
	// A message stored before this pool's queue was created may have been
	// delivered by an earlier one (removed by hand, made again by
	// reopenQueue): its count restarted, its journal did not.
	resume := md != nil && (md.NumDelivered > 1 || w.olderThanQueue(md))
	// Registered before the look below: a cancel that comes after the
	// look finds the task; one that came before it was heard (a cancelled
	// attempt is refused here) or committed an outcome the look finds.
	tctx, cancel := context.WithCancelCause(tracedContext(ctx, msg.Headers()))
	defer cancel(nil)
	cancelled := w.running.add(key, cancel)
	defer w.running.remove(key)
	if cancelled {
		// Its coordinator cancelled it while it was queued: not run. The
		// cancellation is committed here too, so the attempt has an
		// outcome even if its coordinator is gone.
		log.Debug().Msg("cancelled before it was delivered; not run")
		w.commit(ctx, t, &work.Outcome{Error: cancelledMessage}, log)
		return
	}
	if mustLook(md, resume, d.reconnects, w.res.nc) {
		if _, err := w.res.results.Get(ctx, key); err == nil {
			log.Debug().Msg("already completed; delivery dropped")
			_ = msg.Ack()
			return
		}
	}
	var res *work.Outcome
	// What the run leaves for the commit: its events not sent yet and its
	// journal's entries not published yet.
	end := &t.end
	if md != nil && m.MaxDeliveries > 0 && md.NumDelivered > uint64(m.MaxDeliveries) {
		times := fmt.Sprintf("%d times", md.NumDelivered-1)
		if md.NumDelivered == 2 {
			times = "once"
		}
		res = &work.Outcome{Error: "delivered " + times + " to workers that stopped before it finished (a worker crashed, lost its connection or was stopped, or NATS failed for now); not delivered again"}
	} else {
		beats := w.heartbeat(ctx, t, cancel)
		var err error
		delivery := uint64(1)
		if md != nil {
			delivery = max(md.NumDelivered, 1)
		}
		res, err = w.run(tctx, t, delivery, resume, log)
		beats.stop()
		if ctx.Err() != nil {
			// This worker is stopping: another one runs the task. Not
			// before this worker's fetches have ended (within FetchMaxWait):
			// a slot still waiting on the queue would take the task back
			// at once, each taking counting a delivery toward the bound.
			if w.fetchesOver != nil {
				<-w.fetchesOver
			}
			end.flush()
			if handBack(msg, l, 0, log) {
				w.handedBack.Add(1)
			}
			return
		}
		if errors.Is(context.Cause(tctx), errCancelled) && (err != nil || res.Error != "") {
			// Stopped by its coordinator's cancelTask: what it did so far
			// (usage, items) goes back with an error saying so.
			log.Info().Msg("task cancelled by its coordinator")
			if res == nil {
				res = &work.Outcome{}
			}
			res.Error, err = errCancelled.Error(), nil
		}
		if err != nil {
			// The skill, script or journal could not be read or written
			// for now: deliver it again (bounded by MaxDeliveries; the
			// next delivery resumes from the journal) rather than fail it.
			log.Warn().Err(err).Msg("task handed back: NATS failed for now")
			end.flush()
			handBack(msg, l, time.Second, log)
			return
		}
	}
	w.commit(ctx, t, res, log)
}

// mustLook reports whether a delivery looks for its attempt's committed
// outcome before it runs. A first delivery need not: a cancel takes a
// queued message off the queue before it asks the workers, and a worker
// that hears it keeps the key and refuses the attempt (running.add), so
// a committed outcome can only be there for a delivery that came before,
// or for one that may have missed the cancel while the connection was
// down. A redelivery, a message older than its queue (resume), and a
// delivery asked for before a reconnect or taken while disconnected look
// first: the look costs the server a request and its reply.
//
// U11: a cancelled queued attempt does not run, and a committed one does
// not run again.
func mustLook(md *jetstream.MsgMetadata, resume bool, reconnects uint64, nc *nats.Conn) bool {
	return md == nil || resume || nc.Stats().Reconnects != reconnects || !nc.IsConnected()
}

// olderThanQueue reports whether a task message may have been stored
// before the worker's queue was created: it was stored before the worker
// opened the queue (by its stream sequence) and not a second after the
// queue's creation (for the clocks of a cluster's nodes).
func (w *Worker) olderThanQueue(md *jetstream.MsgMetadata) bool {
	w.qmu.Lock()
	cons, floor := w.cons, w.floor
	w.qmu.Unlock()
	return md.Sequence.Stream <= floor && md.Timestamp.Before(cons.CachedInfo().Created.Add(time.Second))
}

// taskRun is what one delivery of a task message keeps while it is
// handled: the message, its lease and heartbeats, and the events, journal
// and transcript of its run, in one allocation rather than one each (a
// worker allocated more for a task outside the task itself than the
// in-process board does for the whole task).
//
// U23: a delivery's state is one allocation; its logger's task fields
// are added only to what it logs (taskFields).
type taskRun struct {
	msg     jetstream.Msg
	m       Message
	key     string // m.Key()
	md      jetstream.MsgMetadata
	lease   lease
	beats   heartbeats
	end     attemptEnd
	events  eventBatch
	journal AttemptLog
	tee     teeLog
	asker   approvalAsker
	out     Outcome // what commit commits
}

// taskFields adds a task's run, task and attempt to each event its
// logger writes, as zerolog's fields of a logger's own would (after the
// event's own): made with With, those fields cost half a kilobyte per
// task, logged or not.
type taskFields struct{ m *Message }

func (f taskFields) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	e.Str("run", f.m.Run).Str("task", f.m.Task).Int("attempt", f.m.Number)
}

// trusts is the work.Options.Trusted of a task whose bundle is trusted
// or not: one of two functions made once, rather than a closure a task.
func trusts(ok bool) func(*spec.Skill) bool {
	if ok {
		return trustedSkill
	}
	return untrustedSkill
}

func trustedSkill(*spec.Skill) bool   { return true }
func untrustedSkill(*spec.Skill) bool { return false }

// attemptEnd is what a delivery's run leaves for its commit: the events
// not sent yet, and the attempt log with the entries the outcome carries
// and that need not be published when it is committed.
type attemptEnd struct {
	events *eventBatch
	log    *AttemptLog
}

// flush sends what the outcome would have carried, for a delivery that
// commits none: the kept events, and the journal's entries, stored
// before the message goes back, so the next delivery resumes after them.
func (e *attemptEnd) flush() {
	if e.events != nil {
		e.events.untail(e.events.tail())
	}
	if e.log != nil {
		_ = e.log.Wait(e.log.Last())
	}
}

// commit commits a delivery's outcome, then acks its message: a failed
// commit hands the message back for another delivery (while its lease
// holds). For a delivery that ran the task, its outcome carries the events
// not sent yet and the transcript, inline when they fit (t.end). The
// journal entries the committed outcome does not carry are stored before
// it (the coordinator then reads the transcript from the journal), those
// it carries are never published; when the commit fails, the journal and
// the events are sent before the message goes back.
//
// N3, N14: the first create-only commit is the outcome; one over
// max_payload is replaced by an error saying so.
//
// N25: the outcome is MACed with the outcome key its message carries.
// U4: the ack is not waited for; a redelivery finds the outcome.
// U8: an outcome never commits without its transcript stored, inline or
// in the journal first.
func (w *Worker) commit(ctx context.Context, t *taskRun, res *work.Outcome, log zerolog.Logger) {
	msg, m, key, l, end := t.msg, &t.m, t.key, &t.lease, &t.end
	res.Worker, res.Host, res.PID = w.opts.Name, w.host, w.pid
	out := &t.out
	*out = Outcome{V: WireVersion, Outcome: *res}
	if end.events != nil {
		out.Events = end.events.tail()
	}
	room := w.res.nc.MaxPayload() - 1024
	data, err := marshalOutcome(out)
	if err == nil && out.Events != nil && int64(len(data)) > room {
		// Too big with its last events: they go as a message of their own.
		end.events.untail(out.Events)
		out.Events = nil
		data, err = marshalOutcome(out)
	}
	if err == nil && out.Log != nil && int64(len(data)) > room {
		// Too big with the transcript inline: the coordinator reads it
		// from the journal stream instead.
		out.Log = nil
		data, err = marshalOutcome(out)
	}
	if err != nil {
		data, _ = json.Marshal(Outcome{V: WireVersion, Outcome: work.Outcome{Error: "outcome: " + err.Error(), Worker: res.Worker, Host: res.Host, PID: res.PID}})
	}
	journaled := func() bool {
		if end.log == nil || res.Logged == 0 {
			return true
		}
		err := end.log.Wait(end.log.Last())
		if err != nil && journalTransient(err) {
			log.Warn().Err(err).Msg("task handed back: its journal could not be stored for now")
			end.flush()
			handBack(msg, l, time.Second, log)
			return false
		}
		if err != nil {
			log.Warn().Err(err).Msg("the task completed but its journal misses its last entries")
		}
		return true
	}
	if out.Log == nil && !journaled() {
		return
	}
	_, err = w.res.results.Create(ctx, key, signOutcome(data, m.OutcomeKey, key))
	if errors.Is(err, nats.ErrMaxPayload) {
		if !journaled() {
			return
		}
		// It would never fit: running it again would not help. The task
		// fails with what to change (its usage still counts).
		data, _ = json.Marshal(Outcome{V: WireVersion, Outcome: work.Outcome{Usage: res.Usage, Worker: res.Worker, Host: res.Host, PID: res.PID,
			Error: fmt.Sprintf("its outcome (result, observations, history items) is %d bytes, over the NATS server's max_payload (%d): raise max_payload in the server's configuration, or have the task return less",
				len(data), w.res.nc.MaxPayload())}})
		_, err = w.res.results.Create(ctx, key, signOutcome(data, m.OutcomeKey, key))
	}
	if err != nil {
		if !errors.Is(err, jetstream.ErrKeyExists) {
			log.Warn().Err(err).Msg("could not commit the outcome; the task will be delivered again")
			end.flush()
			handBack(msg, l, time.Second, log)
			return
		}
		log.Info().Msg("another worker committed this attempt first; this outcome is discarded")
	}
	if end.log != nil {
		end.log.Abandon()
	}
	// Not waited for: an ack that is lost has the message delivered again
	// after the ack wait, and that delivery finds the outcome and is
	// acked unrun.
	if err := msg.Ack(); err != nil {
		log.Debug().Err(err).Msg("ack not sent; a redelivery will find the outcome")
	}
}

// heartbeat tells the server the task is in progress, a few times per
// ack wait, until stop is called; the heartbeats the server answers
// extend the delivery's lease. The first goes a third of the ack wait
// after the delivery was asked for (at once when the fetch waited that
// long): the lease, dated from the ask, holds until then with two thirds
// of the ack wait to spare, and a task shorter than that, the common case
// of a busy queue, costs the server no heartbeat at all. It also looks
// for the attempt's outcome:
// one committed meanwhile (a cancel that came as this worker took the
// message, another worker's after a redelivery) makes this run moot, and
// it is cancelled.
//
// N6: heartbeats keep a live task's message; a dead worker's moves on after
// one ack wait. U3: the first a third of the ack wait after the ask.
func (w *Worker) heartbeat(ctx context.Context, t *taskRun, cancel context.CancelCauseFunc) *heartbeats {
	// Each request is bounded by the period: a slow answer must not hold
	// back the next heartbeat.
	h := &t.beats
	*h = heartbeats{w: w, ctx: ctx, msg: t.msg, key: t.key, cancel: cancel, l: &t.lease, period: max(w.opts.AckWait/3, 10*time.Millisecond)}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.t = time.AfterFunc(max(h.period-time.Since(h.l.asked), 0), h.fire)
	return h
}

// heartbeats are one delivery's heartbeats: a timer rather than a
// goroutine waiting on one (most tasks end before the first heartbeat,
// and then cost only the timer), with its state in the delivery's
// taskRun rather than in variables its closures would each put on the
// heap.
type heartbeats struct {
	w      *Worker
	ctx    context.Context
	msg    jetstream.Msg
	key    string
	cancel context.CancelCauseFunc
	l      *lease
	period time.Duration

	mu      sync.Mutex
	stopped bool
	beating sync.WaitGroup
	t       *time.Timer
}

func (h *heartbeats) fire() {
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return
	}
	h.beating.Add(1)
	h.mu.Unlock()
	defer h.beating.Done()
	// The next is due a period after this one started, however long its
	// requests took (each is bounded by the period): two heartbeats are
	// never more than two periods apart, well within the ack wait.
	start := time.Now()
	h.beat()
	h.mu.Lock()
	if !h.stopped {
		h.t.Reset(h.next(start))
	}
	h.mu.Unlock()
}

// next is the wait for the heartbeat after the one that started at
// start.
func (h *heartbeats) next(start time.Time) time.Duration {
	return max(h.period-time.Since(start), 0)
}

func (h *heartbeats) beat() {
	// An in-progress ack sent as a request: the server answers once it
	// has processed it.
	sent := time.Now()
	if _, err := h.w.res.nc.Request(h.msg.Reply(), []byte("+WPI"), h.period); err == nil {
		h.l.confirmed(sent)
	}
	gctx, gcancel := context.WithTimeout(h.ctx, h.period)
	_, err := h.w.res.results.Get(gctx, h.key)
	gcancel()
	if err == nil {
		h.cancel(errSuperseded)
	}
}

// stop stops the heartbeats: it waits for one under way; none starts
// after it.
func (h *heartbeats) stop() {
	h.mu.Lock()
	h.stopped = true
	h.t.Stop()
	h.mu.Unlock()
	h.beating.Wait()
}

// run loads what the task needs, reads its journal and runs it (resumed
// after what earlier deliveries journaled), journaling as delivery. A
// failure to load or to journal is the task's error, unless it may pass
// (a transient NATS error): that is returned as err.
//
// N10, T5: a redelivery resumes from the attempt log; trust is the worker's
// own, by bundle digest.
func (w *Worker) run(ctx context.Context, t *taskRun, delivery uint64, resume bool, log zerolog.Logger) (*work.Outcome, error) {
	m, end := &t.m, &t.end
	fail := func(format string, args ...any) (*work.Outcome, error) {
		return &work.Outcome{Error: fmt.Sprintf(format, args...)}, nil
	}
	var skill *spec.Skill
	if m.Skill != "" {
		dir, err := w.fetched(fetchKey{digest: m.Bundle}, func() (string, error) { return w.res.objs.fetchBundle(ctx, w.opts.CacheDir, m.Bundle) })
		if transient(err) {
			return nil, err
		}
		if err != nil {
			return fail("skill %s: %v", m.Skill, err)
		}
		if !filepath.IsLocal(filepath.FromSlash(m.Manifest)) {
			return fail("skill %s: manifest path %q leaves its folder", m.Skill, m.Manifest)
		}
		s, err := w.skill(skillKey{dir: dir, manifest: m.Manifest})
		if err != nil {
			return fail("skill %s: %v", m.Skill, err)
		}
		skill = s
	}
	md, err := w.model(ctx, m)
	if transient(err) {
		return nil, err
	}
	if err != nil {
		// Said from the worker: its environment lacks the key, not the
		// coordinator's. The provider's errors already name the model.
		msg := err.Error()
		if !strings.HasPrefix(msg, "model "+m.Model+":") {
			msg = "model " + m.Model + ": " + msg
		}
		return fail("on worker %s: %s", w.opts.Name, msg)
	}
	end.events = &t.events
	end.events.init(w.res.nc, m.Events)
	// Only an earlier delivery of this message journals this attempt: a
	// first delivery has nothing to resume and skips the read (a request
	// per task, a third of what journaling costs a one-step task).
	view := &view{}
	if resume {
		view, err = readJournal(ctx, w.res.journal, m.Run, m.Task, m.Number)
		if transient(err) {
			return nil, err
		}
		if err != nil {
			return fail("%v", err)
		}
	}
	jl := &t.journal
	jl.init(w.res.jsj, journalSubjects+"."+t.key, m.Task, m.Number, delivery, view.last())
	end.log = jl
	if w.linger > 0 {
		jl.linger, end.events.linger = w.linger, w.linger
	}
	if len(view.entries) > 0 {
		log.Info().Int("entries", len(view.entries)).Uint64("delivery", delivery).Msg("resuming the task from its journal")
	}
	var approver work.Approver
	if m.Approvals != "" {
		t.asker = approvalAsker{nc: w.res.nc, subject: m.Approvals}
		approver = &t.asker
	}
	log.Debug().Msg("task started")
	tee := &t.tee
	tee.init(jl, view.entries, w.res.nc.MaxPayload())
	res := w.opts.Work(ctx, &m.Attempt, work.Options{
		Model: md, Skill: skill, Sink: end.events, Logger: log, Approver: approver, FinalInOutcome: true,
		Trusted: trusts(m.Bundle != "" && w.trusted[m.Bundle]),
		Refusal: w.refusal,
		Log:     tee, Logged: view.entries, Secrets: w.secrets, Workspaces: &w.workspaces,
	})
	if err := jl.Err(); err != nil && res.Error != "" && journalTransient(err) {
		// The step failed because the journal did: the next delivery
		// resumes from what was stored.
		return nil, err
	}
	// What the coordinator copies into its run record: the view this
	// delivery resumed from and what it journaled after it, inline when
	// it is small. The entries not stored yet (the final answer's, and
	// under commit-before-effects the steps since the last effect) are
	// stored with the outcome when it carries them, else before it
	// (commit).
	res.Logged = len(view.entries) + int(jl.Last())
	res.Log = tee.inline()
	return res, nil
}

// journalTransient reports whether a journal publish may succeed if made
// again: transient, the stream did not answer (in time), or too many
// publishes awaited their acks.
func journalTransient(err error) bool {
	return transient(err) || errors.Is(err, jetstream.ErrAsyncPublishTimeout) ||
		errors.Is(err, jetstream.ErrTooManyStalledMsgs)
}

// maxSkills bounds the parsed skills a worker keeps (skillCache).
const maxSkills = 256

// skill loads the skill manifest at path, in a fetched bundle's folder,
// once: a bundle's folder is named by its content's digest and never
// changes, so its parse is as good for every task of it as for the first
// (parsing and validating a manifest would otherwise cost more than the
// rest of a short task). Tasks share the skill read-only, as the
// in-process board's tasks share the project's.
//
// U5: one parse per bundle, by its content's digest.
func (w *Worker) skill(key skillKey) (*spec.Skill, error) {
	return w.skills.get(key, func() (*spec.Skill, error) {
		path := filepath.Join(key.dir, filepath.FromSlash(key.manifest))
		s, diags := spec.LoadSkill(path)
		if err := diags.Err(); err != nil {
			return nil, err
		}
		if s == nil {
			return nil, fmt.Errorf("%s holds no skill", filepath.Base(path))
		}
		return s, nil
	})
}

// fetched returns the cache path of an object or bundle (key), fetching
// it the first time: a path in the cache is named by the digest of its
// content and never changes once written, so a worker looks for it once,
// not once per task (as it parses a bundle's manifest once, U5).
func (w *Worker) fetched(key fetchKey, fetch func() (string, error)) (string, error) {
	return w.paths.get(key, fetch)
}

// The keys of a worker's memos and models: structs rather than their
// parts joined into a string, which a task would allocate each time it
// looks.
type (
	// fetchKey is a fetched bundle's (name "") or file's.
	fetchKey struct{ digest, name string }
	// skillKey is a skill's manifest in a fetched bundle's folder.
	skillKey struct{ dir, manifest string }
	// modelKey is a model's name and its script's cache path.
	modelKey struct{ name, script string }
)

// own returns the key with strings of its own: a key's strings may be
// pieces of a task message (U23), which a key kept for the worker's life
// must not keep alive.
func (k fetchKey) own() fetchKey { return fetchKey{strings.Clone(k.digest), strings.Clone(k.name)} }
func (k skillKey) own() skillKey { return skillKey{strings.Clone(k.dir), strings.Clone(k.manifest)} }
func (k modelKey) own() modelKey { return modelKey{strings.Clone(k.name), strings.Clone(k.script)} }

// memoKey is a memo's key: comparable, and copied by own when kept.
type memoKey[K any] interface {
	comparable
	own() K
}

// memo keeps what a worker made once per key, at most maxSkills of them
// (past that it starts over).
type memo[K memoKey[K], V any] struct {
	mu sync.Mutex
	m  map[K]V
}

// get returns key's value, made by build the first time (an error is not
// kept).
func (c *memo[K, V]) get(key K, build func() (V, error)) (V, error) {
	c.mu.Lock()
	v, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := build()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxSkills {
		c.m = map[K]V{}
	}
	c.m[key.own()] = v
	return v, nil
}

// model returns the task's model, built once per name and script.
func (w *Worker) model(ctx context.Context, m *Message) (model.Model, error) {
	script := ""
	if m.Script != "" {
		name := m.ScriptName
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
			name = "workflow.script.yaml"
		}
		var err error
		if script, err = w.fetched(fetchKey{digest: m.Script, name: name}, func() (string, error) {
			return w.res.objs.fetchFile(ctx, w.opts.CacheDir, m.Script, name)
		}); err != nil {
			return nil, err
		}
	}
	key := modelKey{name: m.Model, script: script}
	w.mu.Lock()
	defer w.mu.Unlock()
	if md, ok := w.models[key]; ok {
		return md, nil
	}
	md, err := w.opts.Model(m.Model, script)
	if err != nil {
		return nil, err
	}
	w.models[key.own()] = md
	return md, nil
}
