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
	// end: before an assistant message whose calls lack results.
	end := len(msgs)
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.Assistant {
			got := 0
			for j := i + 1; j < len(msgs) && msgs[j].Role == model.Tool; j++ {
				got++
			}
			if got < len(msgs[i].Calls) {
				end = i
			}
			break
		}
	}
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
	if len(w) > max {
		return fmt.Errorf("window of %d messages exceeds cap %d", len(w), max)
	}
	if w[0].Role != model.User {
		return fmt.Errorf("window starts at a %s message", w[0].Role)
	}
	// No orphans either way: every assistant message is followed by exactly
	// the results of its calls, in order, and tool messages appear nowhere
	// else.
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
	if g < end && msgs[g].Role != model.Assistant {
		return fmt.Errorf("trimmed window's groups start at a %s message %d", msgs[g].Role, g)
	}
	// Maximal: the previous group of the turn would not fit.
	for p := g - 1; p > cur; p-- {
		if msgs[p].Role == model.Assistant {
			if 1+end-p <= max {
				return fmt.Errorf("trimmed window leaves out group %d that fits (%d <= %d)", p, 1+end-p, max)
			}
			break
		}
	}
	return nil
}

func same(a, b model.Message) bool {
	return a.Role == b.Role && a.Text == b.Text && a.CallID == b.CallID && len(a.Calls) == len(b.Calls)
}

// genTranscript builds a well-formed random transcript of about n messages:
// sometimes a stray assistant message before the first user message,
// turns of a user message and 0-6 groups (text-only, or 1-5 calls with
// their results), and sometimes a last group in flight.
func genTranscript(r *rand.Rand, n int) []model.Message {
	var msgs []model.Message
	id := 0
	if r.IntN(10) == 0 {
		msgs = append(msgs, model.Message{Role: model.Assistant, Text: "preamble"})
	}
	for len(msgs) < n {
		msgs = append(msgs, model.Message{Role: model.User, Text: "u" + strconv.Itoa(len(msgs))})
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
			msgs = append(msgs, a)
			for _, c := range a.Calls {
				msgs = append(msgs, model.Message{Role: model.Tool, CallID: c.ID, Text: "r"})
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
		msgs = append(msgs, a)
		for _, c := range a.Calls[:r.IntN(calls)] {
			msgs = append(msgs, model.Message{Role: model.Tool, CallID: c.ID})
		}
	}
	return msgs
}

func TestWindowProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(20261130, 3))
	for i := range 300 {
		n := r.IntN(10_001)
		if i%3 == 0 {
			n = r.IntN(200) // small transcripts hit the edges more often
		}
		msgs := genTranscript(r, n)
		tr := New(nil)
		for k, m := range msgs {
			if err := tr.AppendMessage(m); err != nil {
				t.Fatalf("case %d: append %d: %v", i, k, err)
			}
		}
		for range 5 {
			max := 1 + r.IntN(100)
			w := tr.Window(max)
			if err := checkWindow(msgs, max, w); err != nil {
				t.Fatalf("case %d (%d messages, max %d): %v", i, len(msgs), max, err)
			}
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

func TestLastTurns(t *testing.T) {
	msgs := []model.Message{
		msg(model.User, "u1"), msg(model.Assistant, "a1"),
		msg(model.User, "u2"), msg(model.Assistant, "a2"),
		msg(model.User, "u3"), msg(model.Assistant, "runBoard", "rb"),
	}
	var x Index
	for _, m := range msgs {
		if err := x.Add(m); err != nil {
			t.Fatal(err)
		}
	}
	for n, want := range map[int][]string{
		0: nil,
		1: {"u3"},
		2: {"u2", "a2", "u3"},
		9: {"u1", "a1", "u2", "a2", "u3"},
	} {
		if got := texts(x.LastTurns(msgs, n)); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("LastTurns(%d) = %q, want %q", n, got, want)
		}
	}
}
