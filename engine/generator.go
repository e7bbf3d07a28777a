package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/approval"
	"github.com/fsdrun/fsd/artifact"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/redact"
	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/tool"
	"github.com/fsdrun/fsd/transcript"
)

// env is what differs between the host and a worker: the current-context
// block, the tools, and how calls are dispatched. The generator loop is the
// same for both.
type env interface {
	// prepare runs before each step: it applies manifest changes (C4).
	prepare(ctx context.Context)
	// contextBlock is the current-context block, the system block, and
	// status what changes between requests, which goes last (K5).
	contextBlock() (block, status string)
	tools() []model.ToolDef
	// call dispatches a call of a tool that was in the request.
	call(ctx context.Context, c model.ToolCall) model.ToolResult
	keeper
	// settle runs after a response's results are all in the transcript.
	settle()
	// command reports whether a tool runs a program (on resume its
	// journaled result is used instead of running it again) and whether
	// it declares on-interrupt: fail (see journal.Plan).
	command(name string) (isCommand, failsInDoubt bool)
	// approval says what a call's tool declares about approval (skill
	// tools and scripts; fsd's own tools never ask).
	approval(c model.ToolCall) approval.Tool
}

// keeper says what of a skill's text a window may still carry.
type keeper interface {
	// loaded reports whether a skill is loaded now, for reclaim (H4).
	loaded(skillID string) bool
	// current reports whether the catalog holds a skill at a revision: a
	// context line quotes what the skill added only while it does (C4).
	current(skillID, rev string) bool
}

// genDeps are what a generator needs from whoever runs it.
type genDeps struct {
	runID string            // FSD_RUN_ID of the command tools it calls
	emit  func(event.Event) // stamps and sends the request events
	// acct books the tokens of every model call and holds the budgets;
	// nil counts nothing.
	acct   *account
	tokens *tokenCache // BPE counts of the requests whose usage is estimated
	log    zerolog.Logger
	// rec keeps what each model call was sent (requests.jsonl); nil keeps
	// nothing.
	rec *runrecord.Writer
	now func() time.Time
	// arts keeps results over maxResult tokens as artifacts (nil: results
	// always go whole into the window).
	arts      *artifact.Store
	maxResult int
	// noCache is the workflow's `cache: off`: requests ask for no prompt
	// caching.
	noCache bool
	// cacheScope begins every cache key of the run's generators: the
	// workflow's ("fsd/NAME"), so that runs of one workflow share their
	// provider's cache bucket; "" is per run (cache: per-run, a worker
	// whose coordinator sent none).
	cacheScope string
	// obs watches the generator, its model and tool calls; nil: nothing.
	obs Observer
	// durability says which commits the generator waits for.
	durability spec.Durability
	// finalByCaller: the final answer's commit is the caller's
	// (work.Options.FinalInOutcome).
	finalByCaller bool
	// appr stands before calls that need a person's approval; nil asks
	// for none.
	appr *approval.Gate
	// secrets are masked in every tool result, response and error as it
	// comes in (the toolbox's set); nil masks nothing.
	secrets *redact.Set
	// readers and shed are the workflow's readers: and window-shed:.
	readers spec.Readers
	shed    spec.WindowShed
}

// generator is one LLM tool-call loop with its own transcript.
type generator struct {
	genDeps
	caller model.Caller
	model  model.Model
	// answered is the model that answered the last step when it is not
	// the one the manifests name (Message.Model): a fallback chain's
	// later model. The next request starts the chain from it.
	answered    string
	tr          *transcript.Transcript
	maxMessages int
	maxSteps    int
	env         env
	// item receives every message the generator adds, after it is in the
	// transcript: the host turns them into client events, a worker routes
	// them by its item visibility (D6).
	item func(model.Message)
	// streamText, when set, asks the model to stream text deltas.
	streamText func(delta string)
	// recName is the generator's transcript file in the run record, which
	// names it in requests.jsonl.
	recName string
	// streamReset, when set, hears that the deltas streamed for the
	// current call are void (the provider retried it).
	streamReset func()
	// journal and replay serve a resumed run (see Replay).
	journal *genReplay
	replay  *cursor
	// name identifies the generator in call ids: "host", "task:ID" or
	// "task:ID#N" for attempt N > 1. It is the same on resume.
	name string
	// replaying is set while the loop adds a message the journal already
	// holds, so its events say "replayed". Only the loop's goroutine
	// touches it (item callbacks run on it).
	replaying bool
	// endReplayed: the final answer came from the journal.
	endReplayed bool
	// deferredAnswer: the final answer's wait for the disk went to the
	// board (commit, board.Defer), which calls it after the loop returned
	// and then endSynced, when set, with how it ended: the agent's span
	// ends with it.
	deferredAnswer bool
	endSynced      func(error)
	// kept: a result of this generator was kept as an artifact, so the
	// readers stay offered.
	kept bool
	// output is a typed worker's output schema; nil: a text answer.
	output *typedOutput
	// media are the images and audio the call being answered returned
	// (tool.Hooks.Media), for its result's message.
	media []model.Media
	// turn is the session turn the host's loop runs (its call ids say
	// it from the second on); 0 outside a session.
	turn int
	// past: the loop restates an earlier turn of a session from the
	// journal to rebuild the state it left (sessionrun.go); nothing runs
	// that the journal does not hold.
	past bool
}

// errTurnOver ends the restating of an earlier session turn where its
// journal ends (a turn that failed or was abandoned has no final answer).
var errTurnOver = errors.New("the turn's journal ends here")

// notRunText answers a call of an abandoned turn that has no result: it
// did not run, or nobody knows whether it did.
const notRunText = "not run: the turn was abandoned before this call had a result"

// callID is FSD_CALL_ID of a step's i-th call: stable across resume,
// since the journal replays the same steps in the same order.
//
// J7: the same id on every resume, since a resume replays the same steps.
// Q8: a session's turns each have their own ids.
func (g *generator) callID(step, i int) string {
	name := g.name
	if name == "" {
		name = spec.HostName
	}
	if g.turn > 1 {
		// A session's turns each count steps from 1: the turn keeps the
		// ids of different turns apart.
		return fmt.Sprintf("%s/t%d/s%d/c%d", name, g.turn, step+1, i+1)
	}
	return fmt.Sprintf("%s/s%d/c%d", name, step+1, i+1)
}

// errorf makes one of the generator's own errors. The host's start with
// "host: "; a worker's carry no prefix, since they become its task's error
// and whoever shows that names the task and its agent ("task T failed:
// …"). Saying it here too would say it twice.
func (g *generator) errorf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	if g.caller.TaskID != "" {
		return err
	}
	return fmt.Errorf("host: %w", err)
}

// loop runs steps until a final answer, an error, or max-steps (D8).
func (g *generator) loop(ctx context.Context) (answer string, err error) {
	if g.obs != nil {
		var end func(string, error)
		ctx, end = g.obs.Agent(ctx, g.caller)
		g.deferredAnswer, g.endSynced = false, nil
		defer func() {
			if g.deferredAnswer && err == nil {
				// The board waits for the answer to be on disk after
				// this returns, and fails the task when it is not: the
				// span ends then, and says so (O7).
				g.endSynced = func(err error) { end(answer, err) }
				return
			}
			end(answer, err)
		}()
	}
	answer, err = g.steps(ctx)
	// A task's error goes to board.json and the events.
	return answer, g.secrets.Error(err)
}

// steps is loop's body.
func (g *generator) steps(ctx context.Context) (string, error) {
	for step := 0; ; step++ {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		if g.past {
			if _, ok := g.replay.response(step); !ok {
				return "", errTurnOver
			}
		} else if step >= g.maxSteps {
			return "", g.errorf("%w (max-steps %d)", ErrMaxSteps, g.maxSteps)
		}
		if err := g.budget(); err != nil && !g.past {
			return "", err
		}
		g.env.prepare(ctx)
		req, resp, replayed, err := g.respond(ctx, step)
		if err != nil {
			return "", err
		}
		calls := callsOf(resp, step)
		// M10: the provider's state stays with the answer it came with.
		// M22: so does the model that answered, when not the one the
		// manifests name, and the generator's next steps start from it.
		answered := resp.Model
		if answered == req.Caller.Model {
			answered = ""
		}
		g.answered = answered
		if err := g.addAs(replayed, model.Message{Role: model.Assistant, Text: resp.Text, Calls: calls, State: resp.State, Model: answered}); err != nil {
			return "", err
		}
		if len(calls) == 0 {
			answer, repair, err := g.final(resp.Text)
			if err != nil {
				return "", err
			}
			if repair != "" {
				err := g.addAs(replayed, model.Message{Role: model.User, Text: repair})
				if err == nil {
					err = g.commit(ctx, false, false)
				}
				if err != nil {
					return "", err
				}
				continue
			}
			g.endReplayed = replayed
			return answer, g.commit(ctx, false, true)
		}
		if err := g.runCalls(ctx, step, req, calls, replayed); err != nil {
			return "", err
		}
		g.env.settle()
		// The step is whole: make it durable before the next model call.
		if err := g.commit(ctx, false, false); err != nil {
			return "", err
		}
	}
}

// respond assembles a step's request and gets its response: from the
// journal when it holds the step (replayed), else from the model, with
// the request and its usage recorded, booked and reported.
func (g *generator) respond(ctx context.Context, step int) (*model.Request, *model.Response, bool, error) {
	s := g.assemble(step)
	req := s.Request
	if resp, ok := g.replay.response(step); ok {
		g.maskResponse(resp)
		return req, resp, true, nil
	}
	// B4: given back when the call ends, after generate booked its usage.
	held, err := g.reserve(ctx, req)
	if err != nil {
		return req, nil, false, err
	}
	defer held.release()
	s.Held = held.usage() // B6: on file before the call, for a resume to count
	g.rec.Request(g.recName, s, g.tr.Len(), g.clock())
	var done func(*model.Response, error)
	if g.obs != nil {
		done = g.obs.Chat(ctx, req)
	}
	resp, fig, err := g.generate(ctx, req)
	if done != nil {
		done(resp, err)
	}
	g.rec.Response(g.recName, req.Caller, resp.Usage, fig.cost, fig.counts(), err, g.clock())
	g.emitRequest(req, fig)
	// Providers name themselves ("openai: …", "scripted model: …"); the
	// layer above names the generator.
	return req, resp, false, err
}

// generate asks the model and books what it used: the answer masked, its
// usage estimated when the provider reported none, its cost charged to
// the request's caller. A failed call still answers a Response.
func (g *generator) generate(ctx context.Context, req *model.Request) (*model.Response, *figures, error) {
	var deltas *redact.Stream
	if req.OnText != nil {
		// S2: a secret the model streams in pieces is masked as a whole
		// one is; masking each delta alone let both halves through.
		deltas = redact.NewStream(g.secrets.Secrets(), req.OnText)
		r, reset := *req, req.OnReset
		r.OnText, r.OnReset = deltas.Write, func() {
			deltas.Drop()
			if reset != nil {
				reset()
			}
		}
		req = &r
	}
	resp, err := g.model.Generate(ctx, req)
	if deltas != nil {
		deltas.Flush()
	}
	if resp == nil {
		resp = &model.Response{}
	}
	g.maskResponse(resp)
	err = g.secrets.Error(err)
	fig := &figures{}
	fig.estimated = g.estimate(req, resp, err, &fig.tokens)
	fig.usage = resp.Usage
	fig.cost = g.acct.add(req.Caller, g.priceName(req, resp), resp.Usage)
	return resp, fig, err
}

// figures are what a model call's request event reports, in one
// allocation: its usage and cost and, when the usage is an estimate,
// the request's counts by part.
type figures struct {
	usage     model.Usage
	cost      float64
	tokens    event.Tokens
	estimated bool
}

// counts are the request's counts by part when the usage is an
// estimate, else nil.
func (f *figures) counts() *event.Tokens {
	if !f.estimated {
		return nil
	}
	return &f.tokens
}

// callsOf returns a response's calls, each with an id of its own and
// arguments in the form the transcript keeps.
func callsOf(resp *model.Response, step int) []model.ToolCall {
	calls := resp.Calls
	seen := make(map[string]bool, len(calls))
	for i := range calls {
		// Every call of a response needs its own id: results are matched
		// to calls by it (providers reject repeats too).
		if calls[i].ID == "" || seen[calls[i].ID] {
			calls[i].ID = fmt.Sprintf("call_%d_%d", step+1, i+1)
		}
		seen[calls[i].ID] = true
		// Arguments that are not JSON (a model's slip) are kept as a JSON
		// string: the transcript stays valid JSON lines, and the tool's
		// argument check tells the model what went wrong.
		if a := calls[i].Args; len(a) > 0 && !json.Valid(a) {
			calls[i].Args, _ = json.Marshal(string(a))
		} else if len(a) > 0 {
			// In the form the transcript keeps (compact, HTML-safe
			// escapes), so later requests carry exactly what the record
			// rebuilds them from.
			calls[i].Args, _ = json.Marshal(a)
		}
	}
	return calls
}

// runCalls runs a step's calls in the order given and records their
// results in that order, so every call has its result before the next
// step. A call the journal holds is restated, not run again.
func (g *generator) runCalls(ctx context.Context, step int, req *model.Request, calls []model.ToolCall, replayed bool) error {
	offered := make(map[string]bool, len(req.Tools))
	for _, t := range req.Tools {
		offered[t.Name] = true
	}
	if !replayed && (g.runsCommand(calls, offered) || g.mayAsk(calls, offered)) {
		// A call is in doubt on resume only if it is in the journal: make
		// it durable before its program may start.
		if err := g.commit(ctx, true, false); err != nil {
			return err
		}
	}
	for i, c := range calls {
		journaled, inJournal := g.replay.result(step, i)
		cctx, done := ctx, func(string, bool) {}
		if g.obs != nil {
			cctx, done = g.obs.Tool(ctx, g.caller, c)
		}
		// While it restates a journaled call, what the call emits
		// (skill.loaded, task.added) says "replayed" too.
		var res model.ToolResult
		err := g.as(inJournal, func() (err error) {
			res, err = g.callOne(cctx, c, step, i, offered[c.Name], replayed, journaled, inJournal)
			return err
		})
		done(res.Text, res.IsError || err != nil)
		if err != nil {
			return err
		}
		out := model.Message{Role: model.Tool, CallID: c.ID, Name: c.Name, Text: res.Text, IsError: res.IsError, Artifact: res.Artifact, Media: g.media}
		if out.Spool, err = g.spool(out, journaled.Spool); err != nil {
			return err
		}
		if err := g.addAs(inJournal, out); err != nil {
			return err
		}
	}
	return nil
}

// as runs f with the generator's events marked replayed when it restates
// what the journal holds.
func (g *generator) as(replayed bool, f func() error) error {
	g.replaying = replayed
	defer func() { g.replaying = false }()
	return f()
}

// addAs adds msg to the transcript, its events marked replayed when the
// journal already holds it.
func (g *generator) addAs(replayed bool, msg model.Message) error {
	return g.as(replayed, func() error { return g.add(msg) })
}

// final takes a response without calls as the generator's answer. With an
// output schema the answer is its JSON, compact; an answer that does not
// match gives the repair message to send instead, while repair turns are
// left (checking is deterministic, so a resumed run repeats it exactly).
func (g *generator) final(text string) (answer, repair string, err error) {
	if g.output == nil {
		return text, "", nil
	}
	v, repair, err := g.output.judge(text)
	if err != nil {
		return "", "", g.errorf("%w", err)
	}
	return string(v), repair, nil
}

// callOne answers one call of a step. In a step the journal holds (a
// resume), journal.Plan decides whether the call runs again.
//
// R3, A3: the journal is asked first, then the approval gate, then the call
// runs.
func (g *generator) callOne(ctx context.Context, c model.ToolCall, step, i int, offered, replayed bool,
	journaled model.Message, inJournal bool) (model.ToolResult, error) {
	g.media = nil
	if !offered {
		// L3: whatever the reason, a tool not in this request is unknown.
		return model.ToolResult{Text: "Unknown tool: " + c.Name, IsError: true}, nil
	}
	act := journal.Execute
	if replayed {
		isCmd, failsInDoubt := g.env.command(c.Name)
		act = journal.Plan(journal.Call{Result: inJournal, Command: isCmd, FailsInDoubt: failsInDoubt})
	}
	id := g.callID(step, i)
	var res model.ToolResult
	if g.past {
		switch {
		case !inJournal:
			return model.ToolResult{Text: notRunText, IsError: true}, nil
		case journaled.IsError:
			act = journal.UseJournal // it changed nothing then: nothing to rebuild
		case act != journal.UseJournal:
			// Rebuilt, not asked for again: it was answered when it ran,
			// and what it answers now (a skill changed since) is only the
			// state it leaves.
			_ = g.env.call(tool.WithCallIDs(ctx, tool.CallIDs{Run: g.runID, Call: id}), c)
			return model.ToolResult{Text: journaled.Text, IsError: journaled.IsError, Artifact: journaled.Artifact}, nil
		}
	}
	if act == journal.UseJournal {
		// A program that already ran is not run again.
		g.media = journaled.Media
		return g.maskResult(model.ToolResult{Text: journaled.Text, IsError: journaled.IsError, Artifact: journaled.Artifact}), nil
	}
	// A call that needs approval waits here, before anything runs; its
	// step is durable (runsCommand or mayAsk synced it), so a run
	// stopped while it waits finds it pending on resume.
	gate, err := g.appr.Check(ctx, runrecord.PendingCall{Call: id, Tool: c.Name, Args: c.Args, Task: g.caller.TaskID, Agent: g.caller.Agent}, g.env.approval(c))
	if err != nil {
		return res, g.errorf("%w", err)
	}
	if gate.Reject != nil {
		return *gate.Reject, nil
	}
	if gate.Fresh {
		// Approved only now: it cannot have run before, so the in-doubt
		// rule does not apply — it runs (once).
		act = journal.Execute
	}
	c.Args = gate.Args
	switch act {
	case journal.FailInDoubt:
		g.log.Warn().Str("call", id).Str("tool", c.Name).Msg("in-doubt call not run again (on-interrupt: fail)")
		return model.ToolResult{Text: journal.OutcomeUnknown, IsError: true}, nil
	case journal.Retry:
		g.log.Warn().Str("call", id).Str("tool", c.Name).Msg("running an in-doubt call again with the same FSD_CALL_ID")
	}
	res = g.maskResult(g.env.call(tool.WithHooks(tool.WithCallIDs(ctx, tool.CallIDs{Run: g.runID, Call: id}), g.hooks(c, id)), c))
	if gate.Note != "" {
		res.Text = gate.Note + res.Text
	}
	if ctx.Err() != nil {
		// The run was stopped while the call ran: its result (a
		// "cancelled" error) is not the tool's answer. Left out of the
		// journal, the call is in doubt and a resume decides.
		return res, g.errorf("%w", context.Cause(ctx))
	}
	// What the journal will hold: JSON keeps text as UTF-8, so compare
	// and record the same form the journal stores (a read of non-UTF-8
	// bytes replays as it was recorded).
	res.Text = storedText(res.Text)
	if inJournal && !res.Fresh && (res.Text != g.secrets.String(journaled.Text) || res.IsError != journaled.IsError) {
		return res, g.errorf("resume diverged from the journal at step %d: %s answered %q, the journal says %q (did a manifest change?)",
			step+1, c.Name, clip(res.Text, 80), clip(journaled.Text, 80))
	}
	return res, nil
}

// runsCommand reports whether a response calls a command tool.
func (g *generator) runsCommand(calls []model.ToolCall, offered map[string]bool) bool {
	for _, c := range calls {
		if isCmd, _ := g.env.command(c.Name); isCmd && offered[c.Name] {
			return true
		}
	}
	return false
}

// mayAsk reports whether a response calls a tool that may wait for
// approval: the step is made durable first, so a run stopped while the
// call waits finds it on resume.
//
// A3: the step is synced before a call may wait for a person.
func (g *generator) mayAsk(calls []model.ToolCall, offered map[string]bool) bool {
	if g.appr == nil {
		return false
	}
	for _, c := range calls {
		if offered[c.Name] && g.appr.Policy(g.env.approval(c)) != spec.ApproveNever {
			return true
		}
	}
	return false
}

// storedText is s as a JSON journal stores it: each byte that is not part
// of valid UTF-8 becomes U+FFFD, as encoding/json writes it.
//
// R6: compare what the journal stores, not what the tool returned.
func storedText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// add appends to the transcript, then tells the item sink.
func (g *generator) add(m model.Message) error {
	if err := g.tr.AppendMessage(m); err != nil {
		return g.errorf("transcript: %w", err)
	}
	if g.item != nil {
		g.item(m)
	}
	return nil
}

// request assembles the request of one step from the current state (H5):
// the context block and tool list are built anew, the transcript window is
// cut to the cap (W1, W2), and reader results of unloaded skills become
// stubs (H4).
//
// W3: the context block is built outside the window's cap, so it is always
// there.
func (g *generator) request(step int) *model.Request { return g.assemble(step).Request }

// assemble is request with what the run record keeps of it.
func (g *generator) assemble(step int) runrecord.Sent {
	c := g.caller
	c.Step = step
	c.Answered = g.answered // M22: the chain starts from the model that answered
	window, spans := g.tr.WindowSpans(g.maxMessages, shedOf(g.shed))
	rs := readersOf(g.readers)
	msgs := mediaFor(reclaim(window, g.env, rs), model.CapabilitiesFor(g.model, c))
	stubs := stubsOf(window, msgs, spans)
	tools := withReaders(g.env.tools(), msgs, &g.kept, rs)
	block, status := g.env.contextBlock()
	if status != "" {
		// Clipped: msgs may be the transcript's own array.
		msgs = append(slices.Clip(msgs), model.Message{Role: model.Context, Text: status, Volatile: true})
	}
	return runrecord.Sent{
		Request: &model.Request{
			Context:  block,
			Messages: msgs,
			Tools:    tools,
			Caller:   c,
			OnText:   g.streamText,
			OnReset:  g.streamReset,
			Cache:    !g.noCache,
			CacheKey: g.cacheKey(),
			Output:   g.outputReq(),
		},
		Window: spans,
		Stubs:  stubs,
	}
}

func (g *generator) outputReq() *model.Output {
	if g.output == nil {
		return nil
	}
	return g.output.req
}

// budget refuses a model call once the run or the generator's agent has
// used up a token budget: the generator stops with an error naming it (a
// task fails with it, the host's run ends with it). A resumed run may
// raise the budget.
func (g *generator) budget() error {
	if err := g.acct.check(g.caller); err != nil {
		return g.errorf("%w", err)
	}
	return nil
}

// reserve holds room for req in the budgets of the generator's caller
// (see account.reserve) and bounds its answer to the room held. The
// request is counted only when an input budget applies: a run without
// one never loads the tokenizer for it.
//
// B2: under an output budget the provider is asked for no more answer
// than was reserved.
func (g *generator) reserve(ctx context.Context, req *model.Request) (*reservation, error) {
	in := 0
	if g.acct.counts(req.Caller) {
		tc := g.tokens
		if tc == nil {
			tc = sharedTokens
		}
		in = tc.request(req).Total
	}
	r, err := g.acct.reserve(ctx, req.Caller, in, req.MaxTokens)
	if err != nil {
		return nil, g.errorf("%w", err)
	}
	if r != nil && r.out > 0 {
		req.MaxTokens = r.out
	}
	return r, nil
}

// estimate fills in a response's usage when the model reported none (the
// scripted model, a server that sends no usage): the o200k count of the
// request and of the answer, marked as an estimate. It puts the
// request's count by part in tk and reports whether it did; it does not
// when the provider's usage stands — a provider-backed run never loads
// the tokenizer for this.
func (g *generator) estimate(req *model.Request, resp *model.Response, err error, tk *event.Tokens) bool {
	if err != nil || !resp.Usage.IsZero() || g.tokens == nil {
		return false
	}
	*tk = g.tokens.request(req)
	out := g.tokens.count(resp.Text)
	for _, c := range resp.Calls {
		out += g.tokens.count(c.Name) + g.tokens.count(string(c.Args))
	}
	resp.Usage = model.Usage{InputTokens: tk.Total, OutputTokens: out, Estimated: true}
	return true
}

// priceName is the model string a call is priced by: the one that
// answered if the router says, else the one the manifests chose.
func (g *generator) priceName(req *model.Request, resp *model.Response) string {
	if resp.Model != "" {
		return resp.Model
	}
	return req.Caller.Model
}

// cacheKey names the generator's requests for a provider's prompt cache:
// one key per workflow and agent, so requests that share a prefix meet,
// across runs too; per run and generator under cache: per-run.
//
// K4: one key per workflow and agent.
func (g *generator) cacheKey() string {
	if g.noCache {
		return ""
	}
	if g.cacheScope != "" {
		return g.cacheScope + "/" + cmp.Or(g.caller.Agent, spec.HostName)
	}
	return "fsd/" + g.runID + "/" + cmp.Or(g.name, spec.HostName)
}

func (g *generator) clock() time.Time {
	if g.now == nil {
		return time.Now()
	}
	return g.now()
}

// reclaim replaces the results of reader calls on an unloaded skill's
// artifact with a one-line stub (H4), results kept as artifacts with
// their preview, and drops a context line's quote of a skill that was
// disabled or changed since (C8). It copies the window only when it must.
func reclaim(window []model.Message, k keeper, rs readerSurface) []model.Message {
	var out []model.Message
	for i, m := range window {
		stub := m.Artifact != "" && !k.loaded(m.Artifact)
		stale := m.Quotes != "" && !quoteCurrent(m.Quotes, k)
		if !stub && !stale && m.Spool == "" {
			continue
		}
		if out == nil {
			out = append([]model.Message(nil), window...)
		}
		switch {
		case stub:
			out[i].Text = fmt.Sprintf("[reclaimed: this read skill %q's instructions, which are unloaded; read_skill it again to read them]", m.Artifact)
			out[i].Spool = "" // the artifact left with the skill
		case stale:
			out[i].Text, out[i].Quotes = unquote(m.Text), ""
		default:
			out[i].Text = spoolPreview(m, rs)
		}
	}
	if out == nil {
		return window
	}
	return out
}

// quoteCurrent reports whether the skill a Quotes names is still in the
// catalog at that revision.
func quoteCurrent(q string, k keeper) bool {
	id, rev, _ := strings.Cut(q, "@")
	return k.current(id, rev)
}

// emitRequest reports a model call with its usage and cost, and with the
// o200k counts by part when the usage is an estimate.
func (g *generator) emitRequest(req *model.Request, fig *figures) {
	g.emit(event.Event{Type: event.Request, Task: g.caller.TaskID, Agent: g.caller.Agent,
		Tokens: fig.counts(), Messages: len(req.Messages), Usage: &fig.usage, Cost: fig.cost})
}

// request counts a request's tokens by part with the BPE tokenizer: the
// context block, the window's texts and calls, and each tool's name,
// description and parameter schema.
func (c *tokenCache) request(req *model.Request) event.Tokens {
	var tk event.Tokens
	tk.Context = c.count(req.Context)
	for _, m := range req.Messages {
		tk.Window += c.count(m.Text)
		for _, call := range m.Calls {
			tk.Window += c.count(call.Name) + c.count(string(call.Args))
		}
	}
	for _, t := range req.Tools {
		tk.Tools += c.count(t.Name) + c.count(t.Description) + c.count(string(t.Parameters))
	}
	tk.Total = tk.Context + tk.Window + tk.Tools
	return tk
}

// stubsOf returns the transcript positions and texts of window messages
// that reclaim replaced, or nil.
func stubsOf(window, sentMsgs []model.Message, spans []transcript.Span) map[int]string {
	if len(window) == 0 || &window[0] == &sentMsgs[0] {
		return nil // reclaim copies the window only when it changes it
	}
	var stubs map[int]string
	i := 0
	for _, sp := range spans {
		for pos := sp.From; pos < sp.To && i < len(window); pos++ {
			if sentMsgs[i].Text != window[i].Text {
				if stubs == nil {
					stubs = map[int]string{}
				}
				stubs[pos] = sentMsgs[i].Text
			}
			i++
		}
	}
	return stubs
}
