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
func (a *account) restore(s runrecord.Summary, dir string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.replay(dir) {
		return
	}
	a.run = tally{u: s.Usage(), cost: s.Cost}
	for name, u := range s.Agents {
		*book(&a.agents, name) = tally{u: u.Usage, cost: u.Cost}
	}
}

// replay books the response lines of the record in dir's requests.jsonl;
// false if it cannot be read. a.mu is held.
func (a *account) replay(dir string) bool {
	err := runrecord.Responses(dir, func(l runrecord.Line) {
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
	return err == nil
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
	if err := over(a.run.u, a.maxIn, a.maxOut, a.runKey()); err != nil {
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
	var used model.Usage
	if t := a.agents[name]; t != nil {
		used = t.u
	}
	if err := over(used, b.MaxInputTokens, b.MaxOutputTokens, "limits.agents."+name+"."); err != nil {
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
