package engine

// The host's generator: built from the run (newHost), run on the input as
// a conversation, or asked for its first request (FirstRequest).

import (
	"context"
	"fmt"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/visibility"
)

// newHost builds the host generator and its world.
func (r *Run) newHost(input string) (*generator, *hostEnv, error) {
	tr, journal, err := r.newTranscript("", 1)
	if err != nil {
		return nil, nil, err
	}
	h := &hostEnv{log: r.log, tr: tr, mgr: newManager(managerDeps{
		cat: r.cat, arts: r.arts, box: r.box, emit: r.ev.emit, channel: r.wf.Channel, preview: r.wf.Preview, max: r.limits.MaxLoadedSkills,
	})}
	h.readers = r.wf.Readers
	if r.wf.Host != nil {
		h.prompt = r.wf.Host.Prompt
	}
	h.builtins = r.box.builtins(r.wf.Tools, h.mgr.skillDirs)
	h.board = r.newHostBoard(h)
	g := &generator{
		genDeps: r.genDeps(), caller: model.Caller{Input: input, Model: r.cat.modelFor(nil, true)}, model: r.opts.Model, tr: tr, journal: journal,
		maxMessages: r.limits.MaxTranscriptMessages, maxSteps: r.limits.MaxSteps, env: h, name: "host", recName: transcriptName("", 1),
		// The host's items are client-visible: stream its text as it comes.
		streamText: func(delta string) {
			r.ev.emit(event.Event{Type: event.Text, Text: r.box.secrets.String(delta), Delta: true})
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
	g.replay = newCursor(g.journal, len(g.tr.Messages()))
	return g.loop(ctx)
}

// genDeps are what the run hands each of its generators.
func (r *Run) genDeps() genDeps {
	return genDeps{runID: r.ID, emit: r.ev.emit, acct: r.acct, tokens: r.tokens, log: r.log, rec: r.rec, now: r.now,
		arts: r.arts, maxResult: r.limits.MaxResultTokens, noCache: r.wf.NoCache, obs: r.opts.Observer,
		durability: r.opts.Durability, appr: r.appr, secrets: r.box.secrets, readers: r.wf.Readers, shed: r.wf.WindowShed}
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
