package engine

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/transcript"
)

// newTranscript opens a generator's transcript, backed by its run-record
// file when the run keeps a record.
func (r *Run) newTranscript(task string) (*transcript.Transcript, error) {
	f, err := r.rec.transcriptFile(task)
	if err != nil {
		return nil, err
	}
	var w io.Writer
	if f != nil {
		w = f
	}
	return transcript.New(w, transcript.WithStepSync()), nil
}

// newHost builds the host generator and its world.
func (r *Run) newHost(input string) (*generator, *hostEnv, error) {
	tr, err := r.newTranscript("")
	if err != nil {
		return nil, nil, err
	}
	h := &hostEnv{r: r, mgr: newManager(r), tr: tr}
	h.board = newHostBoard(r, h)
	var name string
	if r.wf.Host != nil {
		name = r.wf.Host.Model
	}
	m, err := r.modelFor(name)
	if err != nil {
		return nil, nil, err
	}
	g := &generator{
		r: r, caller: model.Caller{Input: input}, model: m, tr: tr,
		maxMessages: r.limits.MaxTranscriptMessages, maxSteps: r.limits.MaxSteps, env: h,
		item: func(m model.Message) {
			for _, e := range messageEvents(m, "", "") {
				r.emit(e)
			}
		},
		// The host's items are client-visible: stream its text as it comes.
		streamText: func(delta string) {
			r.emit(event.Event{Type: event.Text, Text: delta, Delta: true})
		},
	}
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
	return g.loop(ctx)
}

// runSummary is run.json in the run record.
type runSummary struct {
	ID           string    `json:"id"`
	Workflow     string    `json:"workflow"`
	Status       string    `json:"status"` // running, finished, failed
	Started      time.Time `json:"started"`
	Finished     time.Time `json:"finished,omitzero"`
	Answer       string    `json:"answer,omitempty"`
	Error        string    `json:"error,omitempty"`
	InputTokens  int64     `json:"input_tokens"`
	OutputTokens int64     `json:"output_tokens"`
}

func (r *Run) addUsage(u model.Usage) {
	r.usageIn.Add(int64(u.InputTokens))
	r.usageOut.Add(int64(u.OutputTokens))
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
