package agui

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/fsdrun/fsd/serve"
)

// Options configures Handler. The zero Options is fine.
type Options struct{}

// Input is the part of AG-UI's RunAgentInput fsd reads. state, tools,
// context and forwardedProps are accepted and ignored: the workflow
// declares its own tools and state, and the protocol lets an agent ignore
// what the client offers.
type Input struct {
	ThreadID string          `json:"threadId"`
	RunID    string          `json:"runId"`
	Messages []Message       `json:"messages"`
	Resume   []ResumeEntry   `json:"resume,omitempty"`
	State    json.RawMessage `json:"state,omitempty"`
}

// Message is one message of the thread as the client holds it; only the
// last user message's text is read.
type Message struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content,omitempty"`
}

// ResumeEntry answers one interrupt: status resolved with a payload (the
// decision), or cancelled (a rejection).
type ResumeEntry struct {
	InterruptID string          `json:"interruptId"`
	Status      string          `json:"status"`
	Payload     json.RawMessage `json:"payload,omitempty"`
}

// Decision is what a resolved interrupt's payload says: approve (the
// default when the payload is absent or true), edit with args, or reject
// with a reason (also when the payload is false).
type Decision struct {
	Decision string          `json:"decision"`
	Args     json.RawMessage `json:"args,omitempty"`
	Reason   string          `json:"reason,omitempty"`
}

// InterruptReason is the reason of the interrupts an approval raises.
const InterruptReason = "tool_approval"

// Handler serves POST /agui over b.
func Handler(b serve.Backend, _ Options) http.Handler {
	return &handler{b: b}
}

type handler struct{ b serve.Backend }

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST a RunAgentInput to /agui", http.StatusMethodNotAllowed)
		return
	}
	var in Input
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		// A body cut at the server's cap is too large, not malformed: 413,
		// as the API answers it.
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, fmt.Sprintf("request body too large: over %d bytes", tooBig.Limit), http.StatusRequestEntityTooLarge)
			return
		}
		// A type mismatch is said in JSON's terms, not Go's.
		var wrong *json.UnmarshalTypeError
		switch {
		case errors.As(err, &wrong) && wrong.Field != "":
			err = fmt.Errorf("%s: unexpected JSON %s", wrong.Field, wrong.Value)
		case errors.As(err, &wrong):
			err = fmt.Errorf("want a JSON object (got %s)", wrong.Value)
		}
		http.Error(w, "the body is not an AG-UI RunAgentInput: "+err.Error(), http.StatusBadRequest)
		return
	}
	if in.ThreadID == "" || in.RunID == "" {
		http.Error(w, "a RunAgentInput needs threadId and runId", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	write := func(e map[string]any) error {
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	_ = Run(r, h.b, in, write)
}

// Run performs one AG-UI run of in against b, handing each AG-UI event to
// write in order: RUN_STARTED first, and RUN_FINISHED or RUN_ERROR last.
//
// Y20: every run opens with RUN_STARTED and ends with exactly one
// RUN_FINISHED or RUN_ERROR, whatever the backend answers.
func Run(r *http.Request, b serve.Backend, in Input, write func(map[string]any) error) error {
	ctx := r.Context()
	m := newMapper(in.ThreadID, in.RunID)
	if err := write(map[string]any{"type": "RUN_STARTED", "threadId": in.ThreadID, "runId": in.RunID}); err != nil {
		return err
	}
	fail := func(msg, code string) error {
		return write(map[string]any{"type": "RUN_ERROR", "message": msg, "code": code})
	}
	turn := 0
	if len(in.Resume) > 0 {
		if err := answer(b, in.ThreadID, in.Resume); err != nil {
			return fail(err.Error(), code(err))
		}
		m.resuming(in.Resume)
	} else {
		text, ok := lastUserText(in.Messages)
		if !ok {
			return fail("the run has no user message to answer: put the user's text last in messages", "invalid_input")
		}
		info, err := b.Send(ctx, in.ThreadID, text)
		if err != nil {
			return fail(err.Error(), code(err))
		}
		turn = info.Turn
	}
	// The whole session streams: the board is rebuilt from its events,
	// and what this run already sent is skipped (earlier turns, or the
	// events up to the interrupt a resume answers).
	events, err := b.Events(ctx, in.ThreadID, 0)
	if err != nil {
		return fail(err.Error(), code(err))
	}
	pending := func() []serve.Approval {
		p, _ := b.Pending(in.ThreadID)
		return p
	}
	for e := range events {
		out, end := m.next(e, turn, pending)
		for _, o := range out {
			if err := write(o); err != nil {
				return err
			}
		}
		if end {
			return nil
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// The stream ended without the turn's end: the resumed turn was
	// already over, or the backend stopped.
	for _, o := range m.live(nil) {
		if err := write(o); err != nil {
			return err
		}
	}
	for _, o := range m.finish(map[string]any{"type": "success"}, nil) {
		if err := write(o); err != nil {
			return err
		}
	}
	return nil
}

// answer answers each resume entry's approval.
func answer(b serve.Backend, session string, resume []ResumeEntry) error {
	// Every entry is checked before any is answered: a run that fails on
	// its second entry having answered its first would leave the client's
	// corrected resume, which sends both again, refused as answered.
	pending, err := b.Pending(session)
	if err != nil {
		return err
	}
	waiting := map[string]bool{}
	for _, p := range pending {
		waiting[p.CallID] = true
	}
	answers := make([]serve.Answer, len(resume))
	for i, re := range resume {
		if !waiting[re.InterruptID] {
			return fmt.Errorf("interrupt %s: %w: no such call waits for approval in session %s (or the resume names it twice)", re.InterruptID, serve.ErrNotFound, session)
		}
		waiting[re.InterruptID] = false
		if answers[i], err = decision(re); err != nil {
			return err
		}
	}
	for i, re := range resume {
		if err := b.Answer(session, re.InterruptID, answers[i]); err != nil {
			return fmt.Errorf("interrupt %s: %w", re.InterruptID, err)
		}
	}
	return nil
}

// decision reads a resume entry as an approval answer.
func decision(re ResumeEntry) (serve.Answer, error) {
	if re.Status == "cancelled" {
		return serve.Answer{Decision: serve.Reject, Reason: "the user cancelled the interrupt"}, nil
	}
	if re.Status != "resolved" {
		return serve.Answer{}, fmt.Errorf("%w: resume status %q is neither resolved nor cancelled", serve.ErrInvalid, re.Status)
	}
	p := strings.TrimSpace(string(re.Payload))
	switch p {
	case "", "null", "true":
		return serve.Answer{Decision: serve.Approve}, nil
	case "false":
		return serve.Answer{Decision: serve.Reject, Reason: "the user rejected the call"}, nil
	}
	var d Decision
	if err := json.Unmarshal(re.Payload, &d); err != nil {
		return serve.Answer{}, fmt.Errorf("%w: interrupt %s: the payload is not {\"decision\": \"approve|edit|reject\", \"args\", \"reason\"}: %v", serve.ErrInvalid, re.InterruptID, err)
	}
	switch d.Decision {
	case "", serve.Approve:
		return serve.Answer{Decision: serve.Approve}, nil
	case serve.Edit:
		// The backend refuses args that are not an object: refused here,
		// before the resume's other entries are answered.
		var obj map[string]json.RawMessage
		if json.Unmarshal(d.Args, &obj) != nil || obj == nil {
			return serve.Answer{}, fmt.Errorf("%w: interrupt %s: an edit needs args, the call's new arguments as a JSON object", serve.ErrInvalid, re.InterruptID)
		}
		return serve.Answer{Decision: serve.Edit, Args: d.Args}, nil
	case serve.Reject:
		return serve.Answer{Decision: serve.Reject, Reason: d.Reason}, nil
	}
	return serve.Answer{}, fmt.Errorf("%w: interrupt %s: decision %q is not approve, edit or reject", serve.ErrInvalid, re.InterruptID, d.Decision)
}

// code is a RUN_ERROR's code for err.
//
// Y22: what the backend refuses ends the run with RUN_ERROR and a code.
func code(err error) string {
	switch {
	case errors.Is(err, serve.ErrBusy):
		return "busy"
	case errors.Is(err, serve.ErrNotFound):
		return "not_found"
	case errors.Is(err, serve.ErrInvalid):
		return "invalid_input"
	}
	return "error"
}

// lastUserText is the text of the last message, when it is the user's:
// a string content, or the text parts of a content list.
func lastUserText(msgs []Message) (string, bool) {
	if len(msgs) == 0 || msgs[len(msgs)-1].Role != "user" {
		return "", false
	}
	c := msgs[len(msgs)-1].Content
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s, s != ""
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(c, &parts) != nil {
		return "", false
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" && p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n"), len(texts) > 0
}
