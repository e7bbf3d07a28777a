package supply

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/model"
)

func user(s string) model.Message { return model.Message{Role: model.User, Text: s} }
func say(s string) model.Message  { return model.Message{Role: model.Assistant, Text: s} }
func call(ids ...string) model.Message {
	m := model.Message{Role: model.Assistant}
	for _, id := range ids {
		m.Calls = append(m.Calls, model.ToolCall{ID: id, Name: "tool_" + id, Args: json.RawMessage(`{}`)})
	}
	return m
}
func result(id string) model.Message {
	return model.Message{Role: model.Tool, CallID: id, Name: "tool_" + id, Text: "r" + id}
}

// short renders a conversation compactly: u:text a:text c:id,id r:id.
func short(msgs []model.Message) []string {
	out := []string{}
	for _, m := range msgs {
		switch {
		case m.Role == model.User:
			out = append(out, "u:"+m.Text)
		case m.Role == model.Tool:
			out = append(out, "r:"+m.CallID)
		case len(m.Calls) > 0:
			s := "c:"
			for i, c := range m.Calls {
				if i > 0 {
					s += ","
				}
				s += c.ID
			}
			out = append(out, s)
		default:
			out = append(out, "a:"+m.Text)
		}
	}
	return out
}

func TestConversation(t *testing.T) {
	// Three whole turns, then the host's current turn ending in a runBoard
	// call (c9) issued beside an addTask call (c8) that already has its
	// result.
	parent := []model.Message{
		user("1"), say("one"),
		user("2"), call("c1"), result("c1"), say("two"),
		user("3"), call("c2", "c3"), result("c2"), result("c3"), say("three"),
		user("4"), call("c4"), result("c4"), call("c8", "c9"), result("c8"),
	}
	tests := []struct {
		name   string
		parent []model.Message
		turns  int
		want   []string
	}{
		{name: "last two turns, pending runBoard dropped with its sibling", parent: parent, turns: 2,
			want: []string{"u:3", "c:c2,c3", "r:c2", "r:c3", "a:three", "u:4", "c:c4", "r:c4"}},
		{name: "one turn", parent: parent, turns: 1, want: []string{"u:4", "c:c4", "r:c4"}},
		{name: "more turns than there are", parent: parent, turns: 50,
			want: []string{"u:1", "a:one", "u:2", "c:c1", "r:c1", "a:two", "u:3", "c:c2,c3", "r:c2", "r:c3", "a:three", "u:4", "c:c4", "r:c4"}},
		{name: "zero means every whole turn", parent: parent, turns: 0,
			want: []string{"u:1", "a:one", "u:2", "c:c1", "r:c1", "a:two", "u:3", "c:c2,c3", "r:c2", "r:c3", "a:three", "u:4", "c:c4", "r:c4"}},
		{name: "pending call alone", parent: []model.Message{user("q"), call("run")}, turns: 8, want: []string{"u:q"}},
		{name: "answered last call is kept", parent: []model.Message{user("q"), call("x"), result("x")}, turns: 8,
			want: []string{"u:q", "c:x", "r:x"}},
		{name: "messages before the first user message are no turn", parent: []model.Message{say("hello"), user("q"), say("a")}, turns: 8,
			want: []string{"u:q", "a:a"}},
		{name: "no user message", parent: []model.Message{say("hello")}, turns: 8, want: []string{}},
		{name: "empty", turns: 8, want: []string{}},
		{name: "orphans in a malformed history are left out",
			parent: []model.Message{user("q"), result("ghost"), call("half", "done"), result("done"), user("r"), say("ok")}, turns: 8,
			want: []string{"u:q", "c:done", "r:done", "u:r", "a:ok"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Conversation(tt.parent, tt.turns)
			if diff := cmp.Diff(tt.want, short(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			checkWhole(t, got)
		})
	}
}

func TestConversationCopies(t *testing.T) {
	parent := []model.Message{user("q"), call("x"), result("x")}
	got := Conversation(parent, 1)
	got[0].Text = "changed"
	got[1].Calls[0].Name = "changed"
	if parent[0].Text != "q" || parent[1].Calls[0].Name != "tool_x" {
		t.Error("Conversation shares memory with the parent")
	}
}

// checkWhole asserts the window invariants: it starts at a user message,
// every result follows its call and every call has its result.
func checkWhole(t *testing.T, msgs []model.Message) {
	t.Helper()
	if len(msgs) > 0 && msgs[0].Role != model.User {
		t.Errorf("window starts with %s", msgs[0].Role)
	}
	open := map[string]bool{}
	answered := map[string]bool{}
	for _, m := range msgs {
		for _, c := range m.Calls {
			open[c.ID] = true
		}
		if m.Role == model.Tool {
			if !open[m.CallID] {
				t.Errorf("result %s without its call", m.CallID)
			}
			answered[m.CallID] = true
		}
	}
	for id := range open {
		if !answered[id] {
			t.Errorf("call %s without its result", id)
		}
	}
}

// FuzzConversation builds conversations from bytes and checks the window
// invariants and the turn bound on each.
func FuzzConversation(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0, 2, 3, 1}, 2)
	f.Add([]byte{0, 2, 2, 3, 4, 0, 2}, 1)
	f.Fuzz(func(t *testing.T, ops []byte, turns int) {
		var msgs []model.Message
		n := 0
		var last []string
		for _, op := range ops {
			switch op % 5 {
			case 0:
				msgs = append(msgs, user(fmt.Sprint(n)))
			case 1:
				msgs = append(msgs, say(fmt.Sprint(n)))
			case 2:
				id := fmt.Sprint("c", n)
				msgs = append(msgs, call(id))
				last = append(last, id)
			case 3:
				if len(last) > 0 {
					msgs = append(msgs, result(last[0]))
					last = last[1:]
				}
			case 4:
				msgs = append(msgs, result(fmt.Sprint("stray", n)))
			}
			n++
		}
		got := Conversation(msgs, turns%20)
		checkWhole(t, got)
		users := 0
		for _, m := range got {
			if m.Role == model.User {
				users++
			}
		}
		limit := turns % 20
		if limit <= 0 {
			limit = 8
		}
		if users > limit {
			t.Errorf("%d turns inherited, limit %d", users, limit)
		}
	})
}
