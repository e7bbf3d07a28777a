package chaos

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"

	"github.com/fsdrun/fsd/model"
)

// ErrScripted is wrapped by the errors the model returns on purpose
// (Options.ErrorRate): a test tells them from the engine's own failures
// with errors.Is.
var ErrScripted = errors.New("chaos: scripted model error")

// Options tune the model. Zero values mean the defaults; a negative rate
// means never.
type Options struct {
	// HostSteps bounds the host: its cap is drawn per seed in
	// [HostSteps/4, HostSteps], and it answers at its cap at the latest.
	// Default 16.
	HostSteps int
	// WorkerSteps is the step at which a board worker answers at the
	// latest. Default 3.
	WorkerSteps int
	// FinalRate is the chance the host answers at a step before its cap.
	// Default 0.05.
	FinalRate float64
	// WorkerFinalRate is the same chance for a worker. Default 0.5.
	WorkerFinalRate float64
	// EmptyRate is the chance of an empty response (no text, no calls),
	// which the engine takes as the final answer "". Default 0.02.
	EmptyRate float64
	// ErrorRate is the chance a call fails with ErrScripted. Default 0:
	// never, so a test opts in to model failures.
	ErrorRate float64
	// HugeRate is the chance that a bad-arguments action sends a huge
	// string. Default 0.05.
	HugeRate float64
	// HugeBytes is the size of a huge string. Default 2 MiB. Huge strings
	// are one fixed text per size, so a process running thousands of seeds
	// holds and tokenizes only a few of them.
	HugeBytes int
	// MaxCalls is the most calls in one response. Default 4.
	MaxCalls int
	// ExtraIDs are skill ids to read besides the catalog's, such as skills
	// that were found but are not enabled.
	ExtraIDs []string
	// Assignees are agent names to try besides the roster the model
	// learns from unknown_assignee answers (a real model would read them in
	// a skill's instructions).
	Assignees []string
	// Readers are the runtime's reader tools (artifact.Tools()). The
	// model calls them, offered or not, with the get values their
	// schemas list and a few that are not: what it knows of them it reads
	// from these definitions, so it tries every selector the readers have.
	// Without them it calls a reader only as an offered tool.
	Readers []model.ToolDef
	// RawJSON lets bad arguments be bytes that are not JSON at all.
	// Providers never hand the engine such arguments (they wrap broken
	// JSON as a JSON string, see openai.Args), so it is off by default.
	RawJSON bool
}

func (o Options) withDefaults() Options {
	def := func(v *float64, d float64) {
		switch {
		case *v == 0:
			*v = d
		case *v < 0:
			*v = 0
		}
	}
	defInt := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defInt(&o.HostSteps, 16)
	defInt(&o.WorkerSteps, 3)
	defInt(&o.HugeBytes, 2<<20)
	defInt(&o.MaxCalls, 4)
	def(&o.FinalRate, 0.05)
	def(&o.WorkerFinalRate, 0.5)
	def(&o.EmptyRate, 0.02)
	def(&o.HugeRate, 0.05)
	if o.ErrorRate < 0 {
		o.ErrorRate = 0
	}
	return o
}

// Model is the chaos model. It holds no mutable state: it is safe for
// concurrent use, and its answer to a request depends only on the seed,
// the options and the request.
type Model struct {
	seed uint64
	opts Options
}

// New returns a chaos model for seed.
func New(seed uint64, opts Options) *Model {
	return &Model{seed: seed, opts: opts.withDefaults()}
}

// Seed is the model's seed.
func (m *Model) Seed() uint64 { return m.seed }

// rng is the random source of one step of one generator:
// PCG(seed, hash(agent, task, step)).
func (m *Model) rng(c model.Caller) *rand.Rand {
	return rand.New(rand.NewPCG(m.seed, key(c.Agent, c.TaskID, c.Step)))
}

func key(agent, task string, step int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(agent))
	h.Write([]byte{0})
	h.Write([]byte(task))
	h.Write([]byte{0})
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(step))
	h.Write(b[:])
	return h.Sum64()
}

// HostCap is the step (1-based) at which the host answers at the latest
// for this seed.
func (m *Model) HostCap() int {
	r := rand.New(rand.NewPCG(m.seed, key("\x00cap", "", 0)))
	lo := max(m.opts.HostSteps/4, 1)
	return lo + r.IntN(m.opts.HostSteps-lo+1)
}

// Generate answers req. It fails only with ctx's error or, at
// Options.ErrorRate, an error wrapping ErrScripted.
func (m *Model) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := req.Caller
	r := m.rng(c)
	who := "host"
	if c.Agent != "" {
		who = fmt.Sprintf("task %s (agent %s)", c.TaskID, c.Agent)
	}
	if r.Float64() < m.opts.ErrorRate {
		return nil, fmt.Errorf("%w: seed %d, %s, step %d", ErrScripted, m.seed, who, c.Step+1)
	}
	usage := model.Usage{InputTokens: 1 + r.IntN(500), OutputTokens: 1 + r.IntN(50)}
	capSteps, finalRate := m.HostCap(), m.opts.FinalRate
	if c.Agent != "" {
		capSteps, finalRate = m.opts.WorkerSteps, m.opts.WorkerFinalRate
	}
	if r.Float64() < m.opts.EmptyRate {
		return &model.Response{Usage: usage}, nil
	}
	if c.Step+1 >= capSteps || r.Float64() < finalRate {
		return &model.Response{Text: fmt.Sprintf("chaos answer of %s at step %d", who, c.Step+1), Usage: usage}, nil
	}
	a := &actor{r: r, o: &m.opts, k: learn(req), worker: c.Agent != ""}
	n := 1
	if r.IntN(10) >= 6 {
		n = 2 + r.IntN(max(m.opts.MaxCalls-1, 1))
	}
	var calls []model.ToolCall
	for len(calls) < n {
		calls = append(calls, a.action()...)
	}
	for i := range calls {
		switch p := r.IntN(100); {
		case p < 5:
			calls[i].ID = "" // the engine names it
		case p < 7 && i > 0:
			calls[i].ID = calls[i-1].ID // a duplicate id, as a sloppy provider sends
		default:
			calls[i].ID = fmt.Sprintf("chaos_%d_%d", c.Step+1, i+1)
		}
	}
	resp := &model.Response{Calls: calls, Usage: usage}
	if r.IntN(5) == 0 {
		resp.Text = "Let me try " + calls[0].Name + "."
	}
	return resp, nil
}
