package transcript

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/fsdrun/fsd/model"
)

// checkWindow verifies w against msgs and max by brute force, without
// sharing code with Index: the W1/W2 invariants and maximality.
func checkWindow(msgs []model.Message, max int, w []model.Message) error {
	end := openEnd(msgs)
	var turns []int
	for i := 0; i < end; i++ {
		if msgs[i].Role == model.User {
			turns = append(turns, i)
		}
	}
	if max < 1 || len(turns) == 0 {
		if len(w) != 0 {
			return fmt.Errorf("window of %d messages, want none (max %d, %d turns)", len(w), max, len(turns))
		}
		return nil
	}
	if len(w) == 0 {
		return fmt.Errorf("empty window, want at least the user message")
	}
	if err := checkShape(w, max); err != nil {
		return err
	}
	cur := turns[len(turns)-1]
	if end-cur <= max {
		// A suffix of whole turns, maximal.
		s := end - len(w)
		for k := range w {
			if !same(w[k], msgs[s+k]) {
				return fmt.Errorf("window[%d] is not msgs[%d]: not the suffix msgs[%d:%d]", k, s+k, s, end)
			}
		}
		prev := -1
		for _, ts := range turns {
			if ts < s {
				prev = ts
			}
		}
		if prev >= 0 && end-prev <= max {
			return fmt.Errorf("window starts at %d but the turn at %d also fits (%d <= %d)", s, prev, end-prev, max)
		}
		return nil
	}
	// Current turn too long: its user message plus newest whole groups.
	if !same(w[0], msgs[cur]) {
		return fmt.Errorf("trimmed window does not start at the current turn's user message %d", cur)
	}
	g := end - (len(w) - 1)
	for k := 1; k < len(w); k++ {
		if !same(w[k], msgs[g+k-1]) {
			return fmt.Errorf("trimmed window[%d] is not msgs[%d]", k, g+k-1)
		}
	}
	if g < end && msgs[g].Role != model.Assistant && msgs[g].Role != model.Context {
		return fmt.Errorf("trimmed window's groups start at a %s message %d", msgs[g].Role, g)
	}
	// Maximal: the previous group of the turn would not fit (a context
	// line is a group of one).
	for p := g - 1; p > cur; p-- {
		if msgs[p].Role == model.Assistant || msgs[p].Role == model.Context {
			if 1+end-p <= max {
				return fmt.Errorf("trimmed window leaves out group %d that fits (%d <= %d)", p, 1+end-p, max)
			}
			break
		}
	}
	return nil
}

// checkShape: W1 (at most max) and W2 (starts at a user message; every
// assistant message followed by exactly the results of its calls, in
// order; tool messages nowhere else).
func checkShape(w []model.Message, max int) error {
	if len(w) > max {
		return fmt.Errorf("window of %d messages exceeds cap %d", len(w), max)
	}
	if w[0].Role != model.User {
		return fmt.Errorf("window starts at a %s message", w[0].Role)
	}
	for i := 0; i < len(w); i++ {
		switch w[i].Role {
		case model.Tool:
			return fmt.Errorf("window[%d]: tool result %q without its call", i, w[i].CallID)
		case model.Assistant:
			for k, c := range w[i].Calls {
				j := i + 1 + k
				if j >= len(w) || w[j].Role != model.Tool || w[j].CallID != c.ID {
					return fmt.Errorf("window[%d]: call %q without its result", i, c.ID)
				}
			}
			i += len(w[i].Calls)
		}
	}
	return nil
}

// kept is where a hysteresis window began: a turn start, or (trim) the
// first group after the user message of the turn at turn.
type kept struct {
	ok, trim   bool
	from, turn int
}

// checkLow verifies a window with hysteresis by brute force: W1/W2; it
// keeps the previous window's start while the messages from there fit
// max; otherwise it is cut anew to the earliest whole turn within low (the
// current turn if none), or in a turn too long for max to its user message
// and the earliest group within low (else within max). It returns where
// this window began, for the next call.
func checkLow(msgs []model.Message, max, low int, w []model.Message, prev kept) (kept, error) {
	end := openEnd(msgs)
	var turns []int
	for i := 0; i < end; i++ {
		if msgs[i].Role == model.User {
			turns = append(turns, i)
		}
	}
	if len(turns) == 0 {
		if len(w) != 0 {
			return prev, fmt.Errorf("window of %d messages before any user message", len(w))
		}
		return prev, nil
	}
	if len(w) == 0 {
		return prev, fmt.Errorf("empty window")
	}
	if err := checkShape(w, max); err != nil {
		return prev, err
	}
	cur := turns[len(turns)-1]
	var want []model.Message
	var next kept
	if end-cur <= max {
		s := -1
		if prev.ok && !prev.trim && prev.from <= cur && end-prev.from <= max {
			s = prev.from
		} else {
			for _, ts := range turns {
				if end-ts <= low {
					s = ts
					break
				}
			}
			if s < 0 {
				s = cur
			}
		}
		want, next = msgs[s:end], kept{ok: true, from: s}
	} else {
		g := -1
		if prev.ok && prev.trim && prev.turn == cur && 1+end-prev.from <= max {
			g = prev.from
		} else {
			for _, bound := range []int{low, max} {
				for p := cur + 1; p < end && g < 0; p++ {
					if (msgs[p].Role == model.Assistant || msgs[p].Role == model.Context) && 1+end-p <= bound {
						g = p
					}
				}
			}
			if g < 0 {
				g = end
			}
		}
		want = append([]model.Message{msgs[cur]}, msgs[g:end]...)
		next = kept{ok: true, trim: true, from: g, turn: cur}
	}
	if len(w) != len(want) {
		return prev, fmt.Errorf("window of %d messages, want %d (prev %+v, now %+v, end %d)", len(w), len(want), prev, next, end)
	}
	for k := range w {
		if !same(w[k], want[k]) {
			return prev, fmt.Errorf("window[%d] is %s %q, want %s %q", k, w[k].Role, w[k].Text, want[k].Role, want[k].Text)
		}
	}
	return next, nil
}

func same(a, b model.Message) bool {
	return a.Role == b.Role && a.Text == b.Text && a.CallID == b.CallID && len(a.Calls) == len(b.Calls)
}

// op is one append to a transcript: a message, or a context change
// (line set) made at that point.
type op struct {
	msg  model.Message
	line string
}

// appendOp makes one append of genTranscript's.
func appendOp(tr *Transcript, o op) error {
	if o.line != "" {
		return tr.AppendContext(ContextChange{Reason: ReasonRead, Line: o.line})
	}
	return tr.AppendMessage(o.msg)
}

// genTranscript builds a well-formed random transcript of about n messages
// as the appends that make it, and the message sequence they must yield:
// sometimes a stray assistant message before the first user message,
// turns of a user message and 0-6 groups (text-only, or 1-5 calls with
// their results), context changes mixed in anywhere — between turns and
// groups, and between a call and its results, where the line must wait for
// the group's last result — and sometimes a last group in flight.
func genTranscript(r *rand.Rand, n int) ([]op, []model.Message) {
	var ops []op
	var msgs, held []model.Message
	open := 0 // results the open group still awaits
	add := func(m model.Message) {
		ops = append(ops, op{msg: m})
		msgs = append(msgs, m)
		if m.Role == model.Tool {
			open--
		}
		if open == 0 {
			msgs, held = append(msgs, held...), nil
		}
		if r.IntN(8) == 0 {
			line := "[fsd context] line " + strconv.Itoa(len(ops))
			ops = append(ops, op{line: line})
			held = append(held, model.Message{Role: model.Context, Text: line})
			if open == 0 {
				msgs, held = append(msgs, held...), nil
			}
		}
	}
	id := 0
	if r.IntN(10) == 0 {
		add(model.Message{Role: model.Assistant, Text: "preamble"})
	}
	for len(msgs) < n {
		add(model.Message{Role: model.User, Text: "u" + strconv.Itoa(len(msgs))})
		groups := r.IntN(7)
		if r.IntN(20) == 0 {
			groups = 20 + r.IntN(40) // a long turn, to exercise trimming
		}
		for g := 0; g < groups && len(msgs) < n; g++ {
			calls := 0
			if r.IntN(4) != 0 {
				calls = 1 + r.IntN(5)
			}
			a := model.Message{Role: model.Assistant, Text: "a" + strconv.Itoa(len(msgs))}
			for c := 0; c < calls; c++ {
				id++
				a.Calls = append(a.Calls, model.ToolCall{ID: "c" + strconv.Itoa(id), Name: "t"})
			}
			open = len(a.Calls)
			add(a)
			for _, c := range a.Calls {
				add(model.Message{Role: model.Tool, CallID: c.ID, Text: "r"})
			}
		}
	}
	if r.IntN(4) == 0 {
		// A group in flight: some of its results have not arrived.
		calls := 1 + r.IntN(5)
		a := model.Message{Role: model.Assistant}
		for c := 0; c < calls; c++ {
			id++
			a.Calls = append(a.Calls, model.ToolCall{ID: "c" + strconv.Itoa(id)})
		}
		open = len(a.Calls)
		add(a)
		for _, c := range a.Calls[:r.IntN(calls)] {
			add(model.Message{Role: model.Tool, CallID: c.ID})
		}
	}
	return ops, msgs
}

func TestWindowProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(20261130, 3))
	for i := range 300 {
		n := r.IntN(10_001)
		if i%3 == 0 {
			n = r.IntN(200) // small transcripts hit the edges more often
		}
		ops, msgs := genTranscript(r, n)
		tr := New(nil)
		for k, o := range ops {
			if err := appendOp(tr, o); err != nil {
				t.Fatalf("case %d: append %d: %v", i, k, err)
			}
		}
		if got := tr.Messages(); len(got) != len(msgs) {
			t.Fatalf("case %d: %d messages, want %d", i, len(got), len(msgs))
		}
		for k, m := range tr.Messages() {
			if !same(m, msgs[k]) {
				t.Fatalf("case %d: message %d is %s %q, want %s %q (context lines wait for the open group's results)",
					i, k, m.Role, m.Text, msgs[k].Role, msgs[k].Text)
			}
		}
		for range 5 {
			max := 1 + r.IntN(100)
			w, err := WindowOf(msgs, max)
			if err != nil {
				t.Fatal(err)
			}
			if err := checkWindow(msgs, max, w); err != nil {
				t.Fatalf("case %d (%d messages, max %d): %v", i, len(msgs), max, err)
			}
		}
	}
}

// Windows with hysteresis, requested as a transcript grows (context lines
// mixed in): W1/W2 hold at every request, the first message stays put
// while it fits, and a cut goes down to the low-water mark.
func TestWindowLowProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(20261130, 14))
	for i := range 200 {
		ops, _ := genTranscript(r, r.IntN(1500))
		max := 1 + r.IntN(80)
		low := LowWater(max)
		tr := New(nil)
		var prev kept
		for k, o := range ops {
			if err := appendOp(tr, o); err != nil {
				t.Fatalf("case %d: append %d: %v", i, k, err)
			}
			if r.IntN(3) != 0 {
				continue // not every append is followed by a request
			}
			next, err := checkLow(tr.Messages(), max, low, tr.Window(max), prev)
			if err != nil {
				t.Fatalf("case %d (op %d, max %d, low %d): %v", i, k, max, low, err)
			}
			prev = next
		}
	}
}

func msg(role model.Role, text string, calls ...string) model.Message {
	m := model.Message{Role: role, Text: text}
	if role == model.Tool {
		m.CallID = calls[0]
		return m
	}
	for _, c := range calls {
		m.Calls = append(m.Calls, model.ToolCall{ID: c, Name: "t"})
	}
	return m
}

func texts(w []model.Message) []string {
	var out []string
	for _, m := range w {
		s := m.Text
		if m.Role == model.Tool {
			s = "r:" + m.CallID
		}
		out = append(out, s)
	}
	return out
}

func TestWindowCases(t *testing.T) {
	u1, a1 := msg(model.User, "u1"), msg(model.Assistant, "a1")
	u2 := msg(model.User, "u2")
	call := msg(model.Assistant, "call", "x", "y")
	rx, ry := msg(model.Tool, "", "x"), msg(model.Tool, "", "y")
	ans := msg(model.Assistant, "ans")
	c0, c1 := msg(model.Context, "c0"), msg(model.Context, "c1")
	tests := []struct {
		name string
		msgs []model.Message
		max  int
		want []string
	}{
		{"empty", nil, 60, nil},
		{"zero cap", []model.Message{u1, a1}, 0, nil},
		{"no user message", []model.Message{a1}, 60, nil},
		{"all fits", []model.Message{u1, a1, u2, call, rx, ry, ans}, 60, []string{"u1", "a1", "u2", "call", "r:x", "r:y", "ans"}},
		{"oldest turn leaves", []model.Message{u1, a1, u2, call, rx, ry, ans}, 6, []string{"u2", "call", "r:x", "r:y", "ans"}},
		{"current turn trimmed by groups", []model.Message{u1, a1, u2, call, rx, ry, ans}, 3, []string{"u2", "ans"}},
		{"group never split", []model.Message{u2, call, rx, ry}, 3, []string{"u2"}},
		{"cap one", []model.Message{u2, call, rx, ry, ans}, 1, []string{"u2"}},
		{"in flight left out", []model.Message{u1, a1, u2, call, rx}, 60, []string{"u1", "a1", "u2"}},
		{"in flight, no results yet", []model.Message{u2, call}, 60, []string{"u2"}},
		{"preamble before first user", []model.Message{a1, u1, ans}, 60, []string{"u1", "ans"}},
		{"lines count toward the cap", []model.Message{u1, c0, a1, u2, c1, ans}, 4, []string{"u2", "c1", "ans"}},
		{"a line is a group of one", []model.Message{u2, call, rx, ry, c1, ans}, 3, []string{"u2", "c1", "ans"}},
		{"a line before the first user message stays out", []model.Message{c0, u1, ans}, 60, []string{"u1", "ans"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := WindowOf(tt.msgs, tt.max)
			if err != nil {
				t.Fatal(err)
			}
			if got := texts(w); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("window = %q, want %q", got, tt.want)
			}
			if err := checkWindow(tt.msgs, tt.max, w); err != nil {
				t.Error(err)
			}
		})
	}
}

// A context change made while calls await results joins the messages after
// the last of them, never between a call and its result (W2), and the
// record keeps the entry where it was made.
func TestContextLineWaitsForResults(t *testing.T) {
	tr := New(nil)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(tr.AppendMessage(msg(model.User, "u")))
	must(tr.AppendContext(ContextChange{Reason: ReasonDisabled, Line: "between turns"}))
	must(tr.AppendMessage(msg(model.Assistant, "call", "x", "y")))
	must(tr.AppendContext(ContextChange{Reason: ReasonRead, Line: "made by x"}))
	must(tr.AppendMessage(msg(model.Tool, "", "x")))
	must(tr.AppendContext(ContextChange{Reason: ReasonRead})) // no line: record only
	if got := texts(tr.Window(60)); fmt.Sprint(got) != fmt.Sprint([]string{"u", "between turns"}) {
		t.Errorf("window with y in flight = %q", got)
	}
	must(tr.AppendMessage(msg(model.Tool, "", "y")))
	want := []string{"u", "between turns", "call", "r:x", "r:y", "made by x"}
	if got := texts(tr.Window(60)); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("window = %q, want %q", got, want)
	}
	var kinds []Kind
	for _, e := range tr.Entries() {
		kinds = append(kinds, e.Kind)
	}
	if want := []Kind{KindMessage, KindContext, KindMessage, KindContext, KindMessage, KindContext, KindMessage}; fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Errorf("entries %v, want %v", kinds, want)
	}
	got, err := Rebuild(tr.Entries())
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(texts(got)) != fmt.Sprint(texts(tr.Messages())) {
		t.Errorf("Rebuild = %q, want %q", texts(got), texts(tr.Messages()))
	}
	var x Index
	must(x.Add(msg(model.User, "u")))
	must(x.Add(msg(model.Assistant, "call", "x")))
	if err := x.Add(msg(model.Context, "line")); err == nil {
		t.Error("Index took a context line between a call and its result")
	}
}
