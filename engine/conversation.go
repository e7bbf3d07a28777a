package engine

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/transcript"
	"github.com/fsdrun/fsd/visibility"
)

// newTranscript opens a generator's transcript, backed by its run-record
// file when the run keeps a record. A resumed run appends after what the
// journal holds, and returns that generator's journal.
func (r *Run) newTranscript(task string, attempt int) (*transcript.Transcript, *genJournal, error) {
	name := transcriptName(task, attempt)
	f, err := r.rec.transcriptFile(name)
	if err != nil {
		return nil, nil, err
	}
	var w io.Writer
	if f != nil {
		w = f
	}
	opts := []transcript.Option{transcript.WithStepSync()}
	j := r.opts.Resume.gen(name)
	if j != nil {
		opts = append(opts, transcript.WithJournal(j.entries))
	}
	return transcript.New(w, opts...), j, nil
}

// newHost builds the host generator and its world.
func (r *Run) newHost(input string) (*generator, *hostEnv, error) {
	tr, journal, err := r.newTranscript("", 1)
	if err != nil {
		return nil, nil, err
	}
	h := &hostEnv{log: r.log, tr: tr, mgr: newManager(managerDeps{
		cat: r.cat, arts: r.arts, box: r.box, emit: r.ev.emit, channel: r.wf.Channel, max: r.limits.MaxLoadedSkills,
	})}
	if r.wf.Host != nil {
		h.prompt = r.wf.Host.Prompt
	}
	h.board = r.newHostBoard(h)
	g := &generator{
		genDeps: r.genDeps(), caller: model.Caller{Input: input, Model: r.cat.modelFor(nil, true)}, model: r.opts.Model, tr: tr, journal: journal,
		maxMessages: r.limits.MaxTranscriptMessages, maxSteps: r.limits.MaxSteps, env: h, name: "host", recName: transcriptName("", 1),
		// The host's items are client-visible: stream its text as it comes.
		streamText: func(delta string) {
			r.ev.emit(event.Event{Type: event.Text, Text: delta, Delta: true})
		},
		streamReset: func() { r.ev.emit(event.Event{Type: event.TextReset}) },
	}
	g.item = func(m model.Message) {
		for _, e := range visibility.Events(m, event.Event{}) {
			e.Replayed = g.replaying
			r.ev.emit(e)
		}
	}
	h.gen = g
	h.mgr.restating = h.replaying
	return g, h, nil
}

// conversation runs the host generator on input until its final answer.
func (r *Run) conversation(ctx context.Context, input string) (string, error) {
	g, h, err := r.newHost(input)
	if err != nil {
		return "", err
	}
	if err := h.board.seed(); err != nil {
		return "", err
	}
	for i, m := range r.opts.History {
		if err := g.tr.AppendMessage(m); err != nil {
			return "", fmt.Errorf("history message %d: %w", i+1, err)
		}
	}
	if err := g.add(model.Message{Role: model.User, Text: input}); err != nil {
		return "", err
	}
	g.replay = newReplay(g.journal, len(g.tr.Messages()))
	return g.loop(ctx)
}

// RunSummary is run.json in the run record: what `fsd runs` lists and
// what `fsd resume` starts from.
type RunSummary struct {
	ID       string `json:"id"`
	Workflow string `json:"workflow"`
	// Status is running, finished, failed or interrupted (a signal or a
	// timeout stopped it). A run that is "running" in its record but whose
	// PID is gone was interrupted too (killed).
	Status      string    `json:"status"`
	PID         int       `json:"pid"`
	Started     time.Time `json:"started"`
	Finished    time.Time `json:"finished,omitzero"`
	Input       string    `json:"input"`
	Answer      string    `json:"answer,omitempty"`
	Error       string    `json:"error,omitempty"`
	InputTokens int64     `json:"input_tokens"`
	// CachedInputTokens of InputTokens were read from the provider's
	// prompt cache; CacheWriteTokens were written to it.
	CachedInputTokens int64 `json:"cached_input_tokens,omitempty"`
	CacheWriteTokens  int64 `json:"cache_write_tokens,omitempty"`
	OutputTokens      int64 `json:"output_tokens"`
	// Seed seeds the handle source, so a resumed run draws the same
	// handles. It is not a secret from the run's owner: handles guard
	// against the model guessing, not against the person who ran it.
	Seed    string            `json:"seed"`
	Resumed int               `json:"resumed,omitempty"`
	Meta    map[string]string `json:"meta,omitempty"`
	// Digests of what the run is made from; a resume refuses to run
	// from files that differ (ErrChanged).
	Digests journal.Digests `json:"digests,omitempty"`
}

// genDeps are what the run hands each of its generators.
func (r *Run) genDeps() genDeps {
	return genDeps{runID: r.ID, emit: r.ev.emit, usage: &r.usage, tokens: r.tokens, log: r.log, rec: r.rec, now: r.now,
		arts: r.arts, maxResult: r.limits.MaxResultTokens, noCache: r.wf.NoCache, obs: r.opts.Observer}
}

// FirstRequest assembles the host's first request without calling the
// model: what `fsd context` prints.
func (r *Run) FirstRequest(input string) (*model.Request, error) {
	if input == "" {
		input = r.wf.Input
	}
	g, h, err := r.newHost(input)
	if err != nil {
		return nil, err
	}
	if err := h.board.seed(); err != nil {
		return nil, err
	}
	if err := g.add(model.Message{Role: model.User, Text: input}); err != nil {
		return nil, err
	}
	return g.request(0), nil
}
