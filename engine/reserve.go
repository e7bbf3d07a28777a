package engine

import (
	"context"
	"fmt"

	"github.com/fsdrun/fsd/model"
)

// A budget holds only if a call is measured before it is made: checking
// what was used lets the last call in, and concurrent workers all in,
// each free to spend a whole answer. So a call under a budget first
// reserves what it may cost — its request's input tokens and the bound on
// its answer — and is made only when used and reserved tokens together
// leave room for it; its answer's usage then takes the reservation's
// place.

// held is what the calls in flight have reserved of one budget.
type held struct{ in, out int }

// reservation is one call's room in the budgets its caller falls under,
// held in the run's account until the call is answered or fails.
type reservation struct {
	root  *account
	holds []*held // of the budgets it is in
	in    int
	// out is the bound on the call's answer, asked of the provider as
	// model.Request.MaxTokens; 0 where no output budget applies.
	out int
}

// limit is one budget a call falls under, as reserve weighs it.
type limit struct {
	maxIn, maxOut int
	used          model.Usage
	held          *held
	key           string // the run's budgets' name in errors ("limits.")
	agent         string // the agent whose budget it is; "" for the run's
}

// limits are the budgets caller c falls under: the run's, then its
// agent's, in buf (there are at most two: a call makes no allocation for
// them). a is the run's account; a.mu is held.
func (a *account) limits(c model.Caller, buf *[2]limit) []limit {
	ls := buf[:0]
	if a.maxIn > 0 || a.maxOut > 0 {
		ls = append(ls, limit{maxIn: a.maxIn, maxOut: a.maxOut, used: a.run.u.Add(a.doubt), held: &a.heldRun, key: a.runKey()})
	}
	if c.TaskID == "" {
		return ls
	}
	name := agentOf(c)
	b, ok := a.perAgent[name]
	if !ok || (b.MaxInputTokens <= 0 && b.MaxOutputTokens <= 0) {
		return ls
	}
	used := a.agentUsed(name)
	if a.heldAgents == nil {
		a.heldAgents = map[string]*held{}
	}
	h := a.heldAgents[name]
	if h == nil {
		h = &held{}
		a.heldAgents[name] = h
	}
	return append(ls, limit{maxIn: b.MaxInputTokens, maxOut: b.MaxOutputTokens, used: used, held: h, agent: name})
}

// usage is what r holds, as a request line records it (runrecord.Line.Held);
// nil for no reservation.
func (r *reservation) usage() *model.Usage {
	if r == nil {
		return nil
	}
	return &model.Usage{InputTokens: r.in, OutputTokens: r.out}
}

// shareKey names a remote attempt's budgets, its share of the run's.
const shareKey = "the task's share (left at its dispatch) of the run's and its agent's "

// runKey names the account's own budgets in errors.
func (a *account) runKey() string {
	if a.key != "" {
		return a.key
	}
	return "limits."
}

// left is what caller c may still use of the budgets it falls under, in
// input and output tokens (0: no bound): what a task sent to a worker
// elsewhere carries as its share. Calls in flight are not subtracted — a
// share that their reservations had emptied would refuse the task's first
// call for tokens they may not spend.
func (a *account) left(c model.Caller) (in, out int) {
	if a == nil {
		return 0, 0
	}
	a = a.root()
	a.mu.Lock()
	defer a.mu.Unlock()
	var buf [2]limit
	for _, l := range a.limits(c, &buf) {
		if l.maxIn > 0 {
			in = lower(in, max(l.maxIn-l.used.InputTokens, 1))
		}
		if l.maxOut > 0 {
			out = lower(out, max(l.maxOut-l.used.OutputTokens, 1))
		}
	}
	return in, out
}

// lower is the smaller of two bounds, 0 being none.
func lower(a, b int) int {
	if a == 0 || b < a {
		return b
	}
	return a
}

// root is the account whose budgets are checked: the run's.
func (a *account) root() *account {
	for a.parent != nil {
		a = a.parent
	}
	return a
}

// counts reports whether a call of c falls under an input budget, so its
// request must be counted. Budgets are fixed for the run: no lock.
func (a *account) counts(c model.Caller) bool {
	if a == nil {
		return false
	}
	a = a.root()
	if a.maxIn > 0 {
		return true
	}
	return c.TaskID != "" && a.perAgent[agentOf(c)].MaxInputTokens > 0
}

// reserve holds room for one call of c in every budget it falls under:
// in input tokens (its request's count) and an answer of up to bound
// tokens (model.DefaultMaxTokens where the request sets none), cut to
// what an output budget has left. A call that cannot fit in what is used
// is refused with ErrBudget naming the budget; one that fits only once
// calls in flight are answered waits for them, so concurrent workers
// never share the last tokens, and none is refused for a reservation
// that turns out larger than the answer. Without a budget it holds
// nothing. The caller releases the reservation when the call ends.
//
// B1: a call is made only if its input and its bounded answer fit in
// what is used and reserved.
func (a *account) reserve(ctx context.Context, c model.Caller, in, bound int) (*reservation, error) {
	if a == nil {
		return nil, nil
	}
	a = a.root()
	if bound <= 0 {
		bound = model.DefaultMaxTokens
	}
	for {
		a.mu.Lock()
		var buf [2]limit
		ls := a.limits(c, &buf)
		if len(ls) == 0 {
			a.mu.Unlock()
			return nil, nil
		}
		out, err := fit(ls, in, bound)
		if err != nil {
			a.mu.Unlock()
			return nil, err
		}
		if room(ls, in, out) {
			r := &reservation{root: a, in: in, out: out, holds: make([]*held, 0, len(ls))}
			for _, l := range ls {
				l.held.in += in
				l.held.out += out
				r.holds = append(r.holds, l.held)
			}
			a.mu.Unlock()
			return r, nil
		}
		freed := a.freedCh()
		if a.onWait != nil {
			a.onWait()
		}
		a.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// fit is the bound on a call's answer under ls, or the error that refuses
// the call: a budget used up, or one the call's input alone would pass.
func fit(ls []limit, in, bound int) (int, error) {
	out := 0
	for _, l := range ls {
		if err := l.refuse(in); err != nil {
			return 0, err
		}
		if l.maxOut > 0 {
			out = lower(out, l.maxOut-l.used.OutputTokens)
		}
	}
	if out > 0 {
		out = min(out, bound)
	}
	return out, nil
}

// refuse is the error that stops a call of in input tokens under l.
func (l limit) refuse(in int) error {
	key := l.key
	if l.agent != "" {
		key = "limits.agents." + l.agent + "."
	}
	err := over(l.used, l.maxIn, l.maxOut, key)
	if err == nil && l.maxIn > 0 && l.used.InputTokens+in > l.maxIn {
		err = fmt.Errorf("%w: %d input tokens used and the next call needs %d, %smax-input-tokens is %d",
			ErrBudget, l.used.InputTokens, in, key, l.maxIn)
	}
	if err != nil && l.agent != "" {
		err = fmt.Errorf("%w (agent %s, all its tasks together)", err, l.agent)
	}
	return err
}

// room reports whether a call of in input tokens and an answer of up to
// out fits beside what calls in flight hold.
//
// B3: calls in flight hold their room, so concurrent workers cannot
// all take the last of it.
func room(ls []limit, in, out int) bool {
	for _, l := range ls {
		if l.maxIn > 0 && l.used.InputTokens+l.held.in+in > l.maxIn {
			return false
		}
		if l.maxOut > 0 && l.used.OutputTokens+l.held.out+out > l.maxOut {
			return false
		}
	}
	return true
}

// freedCh is closed when a reservation is released. a.mu is held.
func (a *account) freedCh() chan struct{} {
	if a.freed == nil {
		a.freed = make(chan struct{})
	}
	return a.freed
}

// release gives the room back, waking calls that wait for it. The call's
// usage, if any, is booked before: between the two the account counts
// both, which errs on the side of the budget.
//
// B4: the room is given back however the call ended.
func (r *reservation) release() {
	if r == nil {
		return
	}
	a := r.root
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, h := range r.holds {
		h.in -= r.in
		h.out -= r.out
	}
	if a.freed != nil {
		close(a.freed)
		a.freed = nil
	}
}
