package natsboard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
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
	// Replicas of the JetStream resources when this worker creates them.
	Replicas int
	Logger   zerolog.Logger
}

// Worker takes task messages from the work queue and runs them.
type Worker struct {
	res      *resources
	opts     WorkerOptions
	qmu      sync.Mutex // guards cons, which reopenQueue replaces, and reopened
	cons     jetstream.Consumer
	reopened time.Time       // reopenQueue's last look
	trusted  map[string]bool // bundle digests of the --trust folders' skills

	mu     sync.Mutex
	models map[string]model.Model
	// running are the tasks in progress, for cancels from coordinators.
	running running

	handedBack atomic.Int64 // tasks given back to the queue on stopping
}

// NewWorker connects to url, prepares the queue's consumer and reads the
// trusted folders.
func NewWorker(ctx context.Context, url string, opts WorkerOptions) (*Worker, error) {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	if opts.AckWait <= 0 {
		opts.AckWait = DefaultAckWait
	}
	if opts.Agents == "" {
		opts.Agents = ">"
	}
	if opts.Name == "" {
		host, _ := os.Hostname()
		opts.Name = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
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
	res, err := connect(ctx, url, "fsd worker "+opts.Name, opts.Replicas)
	if err != nil {
		return nil, err
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
	w := &Worker{res: res, opts: opts, cons: cons, trusted: trusted, models: map[string]model.Model{}}
	if _, err := w.listen(); err != nil {
		res.Close()
		return nil, fmt.Errorf("subscribe to task cancels: %w", err)
	}
	return w, nil
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
	var wg sync.WaitGroup
	for range w.opts.Concurrency {
		wg.Go(func() {
			for ctx.Err() == nil {
				tctx, release, ok := slots.Take(ctx)
				if !ok {
					return
				}
				msg, err := w.queue().Next(jetstream.FetchMaxWait(2 * time.Second))
				if err != nil {
					release()
					if !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrNoMessages) && ctx.Err() == nil {
						trouble.failed(w.opts.Logger, err)
						w.reopenQueue(ctx)
						sleep(ctx, time.Second)
					}
					continue
				}
				trouble.over(w.opts.Logger)
				wg.Go(func() {
					defer release()
					w.handle(tctx, msg)
				})
			}
		})
	}
	wg.Wait()
	return nil
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

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
