package cassette

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/fsdrun/fsd/internal/redact"
	"github.com/fsdrun/fsd/model"
)

// Version is the cassette format this package writes and reads.
const Version = 1

// header is the first line of a cassette. Its key keeps the name cassettes
// already committed to skills' repositories carry, so they still replay.
type header struct {
	Format int               `json:"fsd_recording"`
	Meta   map[string]string `json:"meta,omitempty"`
}

// Exchange is one recorded model call.
type Exchange struct {
	// Agent and Task name the caller (model.Caller): replay matches
	// calls by caller and Seq, never by arrival order.
	Agent string `json:"agent,omitempty"`
	Task  string `json:"task,omitempty"`
	// Seq is the call's place among its caller's calls, from 0.
	Seq  int `json:"seq"`
	Step int `json:"step"` // Caller.Step, for readers
	// Digest is the canonicalised request's hash: a replayed request
	// whose digest differs fails.
	Digest string `json:"digest"`
	// Request summarises the request (hashes, lengths, previews) for a
	// person reading why a replay differs; Response is what the model
	// answered.
	Request  Summary         `json:"request"`
	Response *model.Response `json:"response,omitempty"`
	// Error is a call that failed for good; replay fails the same way.
	Error string `json:"error,omitempty"`
}

// Option configures a Recorder or a Replayer.
type Option func(*config)

type config struct {
	secrets []string
	meta    map[string]string
}

// WithSecrets masks these values wherever they appear in what is written,
// and in the requests a Replayer compares (so digests do not depend on them).
func WithSecrets(values ...string) Option {
	return func(c *config) { c.secrets = append(c.secrets, values...) }
}

// WithMeta sets a header field of the cassette (the model string, a seed).
func WithMeta(key, value string) Option {
	return func(c *config) {
		if c.meta == nil {
			c.meta = map[string]string{}
		}
		c.meta[key] = value
	}
}

func newConfig(opts []Option) (config, redact.Secrets) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	return c, redact.New(c.secrets...)
}

// callerKey identifies a generator: the host ("", "") or a board worker.
type callerKey struct{ agent, task string }

func keyOf(c model.Caller) callerKey { return callerKey{c.Agent, c.TaskID} }

func (k callerKey) String() string {
	switch {
	case k.agent == "" && k.task == "":
		return "host"
	case k.agent == "":
		return fmt.Sprintf("default worker, task %q", k.task)
	default:
		return fmt.Sprintf("agent %q, task %q", k.agent, k.task)
	}
}

// Recorder is a model.Model that passes every call to an inner model and
// appends the exchange to a writer. Safe for concurrent use.
type Recorder struct {
	inner   model.Model
	secrets redact.Secrets

	mu  sync.Mutex
	w   io.Writer
	seq map[callerKey]int
	err error // first write failure; every later call reports it
}

// NewRecorder records inner's exchanges to w, starting with a header line.
func NewRecorder(inner model.Model, w io.Writer, opts ...Option) *Recorder {
	c, secrets := newConfig(opts)
	r := &Recorder{inner: inner, secrets: secrets, w: w, seq: map[callerKey]int{}}
	meta := map[string]string{}
	for k, v := range c.meta {
		meta[k] = secrets.String(v)
	}
	r.err = r.writeLine(header{Format: Version, Meta: meta})
	return r
}

// Generate calls the inner model and records the exchange. A call cancelled
// by ctx is not recorded: it is not an answer the model gave.
func (r *Recorder) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	key := keyOf(req.Caller)
	r.mu.Lock()
	if r.err != nil {
		r.mu.Unlock()
		return nil, r.err
	}
	seq := r.seq[key]
	r.seq[key]++
	r.mu.Unlock()

	sum := Summarize(req, r.secrets)
	resp, err := r.inner.Generate(ctx, req)
	if err != nil && ctx.Err() != nil {
		return resp, err
	}
	ex := Exchange{Agent: key.agent, Task: key.task, Seq: seq, Step: req.Caller.Step, Digest: sum.Digest(), Request: sum}
	if err != nil {
		ex.Error = r.secrets.String(err.Error())
	} else {
		ex.Response = r.scrub(resp)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = r.writeLine(ex)
	}
	if r.err != nil {
		return nil, r.err
	}
	return resp, err
}

// scrub is resp with secrets masked in what the model wrote. Its state
// (M10) is kept as it came: a provider's opaque, encrypted data.
func (r *Recorder) scrub(resp *model.Response) *model.Response {
	if resp == nil {
		return nil
	}
	out := &model.Response{Text: r.secrets.String(resp.Text), Usage: resp.Usage, State: resp.State}
	for _, c := range resp.Calls {
		args := c.Args
		if s := r.secrets.String(string(args)); s != string(args) {
			args = json.RawMessage(s)
		}
		out.Calls = append(out.Calls, model.ToolCall{ID: c.ID, Name: c.Name, Args: args})
	}
	return out
}

// writeLine writes one JSON line in a single Write, so lines of concurrent
// callers never mix. Called with r.mu held (or before r is shared).
func (r *Recorder) writeLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if _, err := r.w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("cassette: write: %w", err)
	}
	return nil
}

// Replayer is a model.Model that answers from a cassette, offline. Safe for
// concurrent use.
type Replayer struct {
	secrets redact.Secrets
	meta    map[string]string
	byKey   map[callerKey][]Exchange

	mu   sync.Mutex
	next map[callerKey]int
}

// ErrDiverged is wrapped by every error about a request that does not match
// the cassette.
var ErrDiverged = errors.New("replay diverged from the cassette")

// NewReplayer reads a whole cassette. Errors name the line.
func NewReplayer(r io.Reader, opts ...Option) (*Replayer, error) {
	_, secrets := newConfig(opts)
	p := &Replayer{secrets: secrets, byKey: map[callerKey][]Exchange{}, next: map[callerKey]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 256<<20)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(b, &probe); err != nil {
			return nil, fmt.Errorf("cassette line %d: not a JSON object: %v", line, err)
		}
		if _, ok := probe["fsd_recording"]; ok {
			var h header
			if err := json.Unmarshal(b, &h); err != nil {
				return nil, fmt.Errorf("cassette line %d: bad header: %v", line, err)
			}
			if h.Format > Version {
				return nil, fmt.Errorf("cassette line %d: format version %d is newer than this fsd reads (%d); upgrade fsd", line, h.Format, Version)
			}
			p.meta = h.Meta
			continue
		}
		var ex Exchange
		if err := json.Unmarshal(b, &ex); err != nil {
			return nil, fmt.Errorf("cassette line %d: bad exchange: %v", line, err)
		}
		if ex.Digest == "" || (ex.Response == nil && ex.Error == "") {
			return nil, fmt.Errorf("cassette line %d: exchange without digest or response", line)
		}
		k := callerKey{ex.Agent, ex.Task}
		p.byKey[k] = append(p.byKey[k], ex)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cassette line %d: %w", line+1, err)
	}
	for k, exs := range p.byKey {
		slices.SortStableFunc(exs, func(a, b Exchange) int { return a.Seq - b.Seq })
		for i, ex := range exs {
			if ex.Seq != i {
				return nil, fmt.Errorf("cassette: %s has no exchange %d (found %d)", k, i, ex.Seq)
			}
		}
	}
	return p, nil
}

// OpenReplayer reads the cassette at path.
func OpenReplayer(path string, opts ...Option) (*Replayer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := NewReplayer(f, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Meta returns the cassette's header fields.
func (p *Replayer) Meta() map[string]string { return p.meta }

// Generate answers with the recorded response for this caller's next call,
// or fails if the request is not the one recorded. A streaming request gets
// the whole recorded text as one delta.
func (p *Replayer) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	key := keyOf(req.Caller)
	p.mu.Lock()
	seq := p.next[key]
	p.next[key]++
	p.mu.Unlock()

	exs := p.byKey[key]
	if seq >= len(exs) {
		if len(exs) == 0 {
			return nil, fmt.Errorf("replay: %s, step %d: %w: the cassette has no calls by this caller", key, seq, ErrDiverged)
		}
		return nil, fmt.Errorf("replay: %s, step %d: %w: the cassette has only %d calls by this caller", key, seq, ErrDiverged, len(exs))
	}
	ex := exs[seq]
	sum := Summarize(req, p.secrets)
	if sum.Digest() != ex.Digest {
		why := p.secrets.String(explain(ex.Request, sum, req))
		return nil, fmt.Errorf("replay: %s, step %d: %w: %s", key, seq, ErrDiverged, why)
	}
	if ex.Error != "" {
		return nil, fmt.Errorf("%s (replayed from the cassette)", ex.Error)
	}
	resp := cloneResponse(ex.Response)
	if req.OnText != nil && resp.Text != "" {
		req.OnText(resp.Text)
	}
	return resp, nil
}

// Unused lists the callers whose recorded calls were not all replayed: a
// run that ends early against its cassette has changed too.
func (p *Replayer) Unused() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for k, exs := range p.byKey {
		if n := p.next[k]; n < len(exs) {
			out = append(out, fmt.Sprintf("%s: %d of %d recorded calls not replayed", k, len(exs)-n, len(exs)))
		}
	}
	slices.Sort(out)
	return out
}

func cloneResponse(r *model.Response) *model.Response {
	out := &model.Response{Text: r.Text, Usage: r.Usage, State: r.State}
	for _, c := range r.Calls {
		out.Calls = append(out.Calls, model.ToolCall{ID: c.ID, Name: c.Name, Args: append(json.RawMessage(nil), c.Args...)})
	}
	return out
}
