package engine

import (
	"fmt"
	"sync"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
)

// account is a run's one token account. Every model call's usage — as the
// provider reported it, or the o200k estimate when it reported none — is
// added here once, to the run, to its task and to its agent, with its
// cost. The request and task events, run.finished, run.json and the
// budgets all read this account, so no two of them can disagree.
type account struct {
	mu     sync.Mutex
	run    tally
	tasks  map[string]*tally
	agents map[string]*tally

	// Budgets (0: none) and prices; fixed for the run. key names the
	// run's budgets in errors ("": "limits.").
	maxIn, maxOut int
	key           string
	perAgent      map[string]spec.Budget
	prices        map[string]spec.Price

	// heldRun and heldAgents are what calls in flight reserved of the
	// run's and each agent's budgets; freed wakes calls waiting for room
	// (reserve.go).
	heldRun    held
	heldAgents map[string]*held
	freed      chan struct{}
	// onWait, when set, hears that a call waits for room (a.mu held):
	// tests hold calls in flight until the others are waiting.
	onWait func()

	// parent is the run's account of an attempt's (attempt): every call
	// is booked there too, and its budgets are the ones checked.
	parent *account

	// doubt is what calls in flight when an earlier process of the run
	// stopped had reserved, by the run and by agent: the budgets count it
	// as used, the totals (what providers reported) do not.
	doubt       model.Usage
	agentsDoubt map[string]model.Usage
}

// tally is what a run, a task or an agent used.
type tally struct {
	u    model.Usage
	cost float64
}

func newAccount(wf *spec.Workflow, l spec.Limits) *account {
	return &account{maxIn: l.MaxInputTokens, maxOut: l.MaxOutputTokens, perAgent: l.Agents, prices: wf.Prices,
		tasks: map[string]*tally{}, agents: map[string]*tally{}}
}

// attempt returns the account of one task attempt run with a: its total
// is the attempt's usage, every call is booked into a as well, and a's
// budgets are checked before each call.
func (a *account) attempt() *account {
	return &account{parent: a, prices: a.prices} // no tasks or agents: add
}

// restore starts a resumed run's account from what the run used before
// (replayed steps are not billed again): the response lines of
// requests.jsonl, one per model call, which hold every call up to the
// last commit even when the process was killed; run.json's totals (made
// at its start and end) when the record has no such lines.
//
// R5: a resumed run's account starts from its record.
//
// It returns how many calls were in doubt and what they held (see
// replay).
func (a *account) restore(s runrecord.Summary, dir string) (calls int, held model.Usage) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if calls, ok := a.replay(dir); ok {
		return calls, a.doubt
	}
	// What a replay that failed midway booked is dropped, its calls in
	// doubt too: the summary stands for the whole record.
	a.doubt, a.agentsDoubt = model.Usage{}, nil
	a.tasks, a.agents = map[string]*tally{}, map[string]*tally{}
	a.run = tally{u: s.Usage(), cost: s.Cost}
	for name, u := range s.Agents {
		*book(&a.agents, name) = tally{u: u.Usage, cost: u.Cost}
	}
	return 0, model.Usage{}
}

// replay books the response lines of the record in dir's requests.jsonl,
// and counts as spent, in the budgets only, what each call under a budget
// reserved when no response line follows its request: the call was in
// flight when the process stopped, and the provider may have answered
// and billed it. It returns how many such calls there were; false if the
// file cannot be read. a.mu is held.
//
// B7: a reservation left unanswered by a stopped process counts as used.
func (a *account) replay(dir string) (int, bool) {
	open := map[string]runrecord.Line{} // by generator: its request awaiting a response
	calls := 0
	spent := func(l runrecord.Line) {
		calls++
		a.doubt = a.doubt.Add(*l.Held)
		if l.Task != "" {
			if a.agentsDoubt == nil {
				a.agentsDoubt = map[string]model.Usage{}
			}
			name := agentOf(model.Caller{TaskID: l.Task, Agent: l.Agent})
			a.agentsDoubt[name] = a.agentsDoubt[name].Add(*l.Held)
		}
	}
	err := runrecord.Responses(dir, func(l runrecord.Line) {
		if l.Kind == runrecord.KindRequest {
			// A generator makes one call at a time: a request before this
			// one of the same generator that is still open went unanswered.
			if prev, ok := open[l.Gen]; ok {
				spent(prev)
			}
			open[l.Gen] = l
			return
		}
		if prev, ok := open[l.Gen]; ok && prev.Step == l.Step {
			delete(open, l.Gen)
		}
		if l.Usage == nil || l.Usage.IsZero() {
			return
		}
		a.run.add(*l.Usage, l.Cost)
		if l.Task != "" {
			c := model.Caller{TaskID: l.Task, Agent: l.Agent}
			book(&a.tasks, l.Task).add(*l.Usage, l.Cost)
			book(&a.agents, agentOf(c)).add(*l.Usage, l.Cost)
		}
	})
	for _, l := range open {
		spent(l)
	}
	return calls, err == nil
}

// add books one call's usage; modelName prices it. It returns the call's
// cost.
func (a *account) add(c model.Caller, modelName string, u model.Usage) float64 {
	if a == nil || u.IsZero() {
		return 0
	}
	if a.parent != nil {
		a.parent.add(c, modelName, u)
	}
	cost := a.cost(modelName, u)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.run.add(u, cost)
	// An attempt's account is read for its total only (Outcome.Usage);
	// the run's keeps each task's and agent's.
	if c.TaskID != "" && a.parent == nil {
		book(&a.tasks, c.TaskID).add(u, cost)
		book(&a.agents, agentOf(c)).add(u, cost)
	}
	return cost
}

// book is key's tally in *m, made (and *m with it) on its first use: an
// attempt's account books one task and one agent, often nothing.
func book(m *map[string]*tally, key string) *tally {
	t := (*m)[key]
	if t == nil {
		if *m == nil {
			*m = map[string]*tally{}
		}
		t = &tally{}
		(*m)[key] = t
	}
	return t
}

func (t *tally) add(u model.Usage, cost float64) {
	t.u = t.u.Add(u)
	t.cost += cost
}

// agentOf names a worker's agent as limits.agents does.
func agentOf(c model.Caller) string {
	if c.Agent == "" {
		return board.DefaultWorker
	}
	return c.Agent
}

// cost prices u by the workflow's prices for modelName (0 without one).
func (a *account) cost(modelName string, u model.Usage) float64 {
	p, ok := a.prices[modelName]
	if !ok {
		return 0
	}
	return p.Cost(u.InputTokens, u.CachedInputTokens, u.CacheWriteTokens, u.OutputTokens)
}

// check refuses a model call of caller c once a budget it falls under is
// used up: the run's, then its agent's.
func (a *account) check(c model.Caller) error {
	if a == nil {
		return nil
	}
	if a.parent != nil {
		return a.parent.check(c)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := over(a.run.u.Add(a.doubt), a.maxIn, a.maxOut, a.runKey()); err != nil {
		return err
	}
	if c.TaskID == "" {
		return nil
	}
	name := agentOf(c)
	b, ok := a.perAgent[name]
	if !ok {
		return nil
	}
	if err := over(a.agentUsed(name), b.MaxInputTokens, b.MaxOutputTokens, "limits.agents."+name+"."); err != nil {
		return fmt.Errorf("%w (agent %s, all its tasks together)", err, name)
	}
	return nil
}

func over(u model.Usage, maxIn, maxOut int, key string) error {
	if maxIn > 0 && u.InputTokens >= maxIn {
		return fmt.Errorf("%w: %d input tokens used, %smax-input-tokens is %d", ErrBudget, u.InputTokens, key, maxIn)
	}
	if maxOut > 0 && u.OutputTokens >= maxOut {
		return fmt.Errorf("%w: %d output tokens used, %smax-output-tokens is %d", ErrBudget, u.OutputTokens, key, maxOut)
	}
	return nil
}

// agentUsed is what an agent's budget counts as used: its calls' usage
// and what its calls in doubt held. a.mu is held.
func (a *account) agentUsed(name string) model.Usage {
	var used model.Usage
	if t := a.agents[name]; t != nil {
		used = t.u
	}
	return used.Add(a.agentsDoubt[name])
}

// total is what the run used so far.
func (a *account) total() (model.Usage, float64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.run.u, a.run.cost
}

// task is what a task's model calls used, every attempt together.
func (a *account) task(id string) (model.Usage, float64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t := a.tasks[id]; t != nil {
		return t.u, t.cost
	}
	return model.Usage{}, 0
}

// byAgent is what each agent used, for run.json (a resume restores its
// budgets from it).
func (a *account) byAgent() map[string]runrecord.AgentUsage {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.agents) == 0 {
		return nil
	}
	out := make(map[string]runrecord.AgentUsage, len(a.agents))
	for name, t := range a.agents {
		out[name] = runrecord.AgentUsage{Usage: t.u, Cost: t.cost}
	}
	return out
}

// summarize writes the run's figures into s.
func (a *account) summarize(s *runrecord.Summary) {
	u, cost := a.total()
	s.SetUsage(u)
	s.Cost = cost
	s.Agents = a.byAgent()
}

// withTaskUsage puts a task's usage on the events that end it.
func (a *account) withTaskUsage(e event.Event) event.Event {
	if a == nil {
		return e
	}
	switch e.Type {
	case event.TaskCompleted, event.TaskFailed, event.TaskCancelled:
		u, cost := a.task(e.Task)
		e.Usage, e.Cost = &u, cost
	}
	return e
}
