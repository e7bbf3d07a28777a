package transcript

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fsdrun/fsd/model"
)

// wantOldest is the window-shed: oldest window by brute force: the
// earliest start p that fits max — a turn start (msgs[p:end]) or a group
// start behind a user message (that turn's user message, then
// msgs[p:end]) — else the current turn's user message alone.
func wantOldest(msgs []model.Message, end, max int) []model.Message {
	var turns []int
	for i := 0; i < end; i++ {
		if msgs[i].Role == model.User {
			turns = append(turns, i)
		}
	}
	if max < 1 || len(turns) == 0 {
		return nil
	}
	head := -1
	for p := turns[0]; p < end; p++ {
		switch msgs[p].Role {
		case model.User:
			head = p
			if end-p <= max {
				return msgs[p:end]
			}
		case model.Assistant, model.Context:
			if 1+end-p <= max {
				return append([]model.Message{msgs[head]}, msgs[p:end]...)
			}
		}
	}
	return []model.Message{msgs[turns[len(turns)-1]]}
}

// openEnd is where complete messages end: before an assistant message
// whose calls lack results.
func openEnd(msgs []model.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.Assistant {
			got := 0
			for j := i + 1; j < len(msgs) && msgs[j].Role == model.Tool; j++ {
				got++
			}
			if got < len(msgs[i].Calls) {
				return i
			}
			return len(msgs)
		}
	}
	return len(msgs)
}

func checkOldest(msgs []model.Message, max int, w []model.Message) error {
	want := wantOldest(msgs, openEnd(msgs), max)
	if len(want) == 0 {
		if len(w) != 0 {
			return fmt.Errorf("window of %d messages, want none", len(w))
		}
		return nil
	}
	if err := checkShape(w, max); err != nil {
		return err
	}
	if len(w) != len(want) {
		return fmt.Errorf("window of %d messages, want %d", len(w), len(want))
	}
	for k := range w {
		if !same(w[k], want[k]) {
			return fmt.Errorf("window[%d] is %s %q, want %s %q", k, w[k].Role, w[k].Text, want[k].Role, want[k].Text)
		}
	}
	return nil
}

// window-shed: oldest, requested as a transcript grows (context lines
// mixed in): every window is W1/W2-shaped, holds the most messages that
// fit with the oldest group leaving first, and its spans rebuild it from
// the transcript (as a run record does).
func TestWindowOldestProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(20261201, 7))
	for i := range 200 {
		ops, _ := genTranscript(r, r.IntN(1500))
		max := 1 + r.IntN(80)
		tr := New(nil)
		for k, o := range ops {
			if err := appendOp(tr, o); err != nil {
				t.Fatalf("case %d: append %d: %v", i, k, err)
			}
			if k%3 != 0 {
				continue
			}
			w, spans := tr.WindowSpans(max, ShedOldest)
			msgs := tr.Messages()
			if err := checkOldest(msgs, max, w); err != nil {
				t.Fatalf("case %d after %d messages, max %d: %v", i, len(msgs), max, err)
			}
			var rebuilt []model.Message
			for _, sp := range spans {
				rebuilt = append(rebuilt, msgs[sp.From:sp.To]...)
			}
			if len(rebuilt) != len(w) {
				t.Fatalf("case %d: spans %v rebuild %d messages of %d", i, spans, len(rebuilt), len(w))
			}
			for j := range w {
				if !same(rebuilt[j], w[j]) {
					t.Fatalf("case %d: spans %v rebuild message %d wrong", i, spans, j)
				}
			}
		}
	}
}

// Over the cap, oldest keeps more than half: two turns of three groups
// each under a cap of 6 keep the second turn's user message and its
// three groups and the first turn's last group behind its user message.
func TestWindowOldestKeepsMost(t *testing.T) {
	tr := New(nil)
	add := func(m model.Message) {
		if err := tr.AppendMessage(m); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range []string{"u1", "u2"} {
		add(model.Message{Role: model.User, Text: u})
		for k := range 3 {
			add(model.Message{Role: model.Assistant, Text: fmt.Sprintf("%s-a%d", u, k)})
		}
	}
	w, _ := tr.WindowSpans(6, ShedOldest)
	if got := fmt.Sprint(texts(w)); got != "[u1 u1-a2 u2 u2-a0 u2-a1 u2-a2]" {
		t.Errorf("oldest window %s", got)
	}
	// half, on the same messages, keeps the last turn alone.
	tr2 := New(nil)
	for _, m := range tr.Messages() {
		if err := tr2.AppendMessage(m); err != nil {
			t.Fatal(err)
		}
	}
	if w, _ := tr2.WindowSpans(6, ShedHalf); len(w) != 4 {
		t.Errorf("half window has %d messages, want the last turn's 4", len(w))
	}
}
