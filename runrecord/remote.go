package runrecord

import (
	"strings"

	"github.com/fsdrun/fsd/model"
)

// transcriptSteps gives every generator whose requests are not in the
// record one step per model response, read from its transcript: a task
// that ran on a remote worker (fsd run --nats) has its transcript copied
// into the coordinator's journal, but its requests were assembled on the
// worker. Such a step's request holds the transcript's messages before
// the response, without the context block and tools (not on record), and
// says so (Step.Reconstructed). A conversation-supply task's transcript
// starts with the parent's turns it inherited: their assistant messages
// were not its model calls, so steps start after its task message.
func (rec *Record) transcriptSteps() {
	agents := map[string]string{}
	for i := range rec.Tasks {
		agents[rec.Tasks[i].ID] = rec.Tasks[i].Agent()
	}
	for _, g := range rec.Gens {
		if len(g.Steps) > 0 || g.Task == "" {
			continue
		}
		if g.Agent == "" {
			g.Agent = agents[g.Task]
		}
		g.reconstruct()
	}
}

// reconstruct makes the steps of a task's generator with no request on
// record from its transcript.
func (g *Gen) reconstruct() {
	// The k-th assistant message is the k-th assistant entry: context
	// lines never are one. An entry's time is when it was written, so
	// a step ran from the entry before its response to the response.
	var times [][2]int // entry indices: before, response
	from := taskMessage(g.Task, len(g.Entries), func(i int) *model.Message { return g.Entries[i].Message })
	for i, e := range g.Entries[from:] {
		if e.Message != nil && e.Message.Role == model.Assistant {
			times = append(times, [2]int{max(from+i-1, 0), from + i})
		}
	}
	k := 0
	from = taskMessage(g.Task, len(g.Messages), func(i int) *model.Message { return &g.Messages[i] })
	for at, m := range g.Messages {
		if at < from || m.Role != model.Assistant || k >= len(times) {
			continue
		}
		st := &Step{Step: k, At: at, Reconstructed: true,
			Sent: g.Entries[times[k][0]].Time, Done: g.Entries[times[k][1]].Time,
			Request: &model.Request{Messages: g.Messages[:at:at], Caller: model.Caller{Agent: g.Agent, TaskID: g.Task, Step: k}}}
		g.Steps = append(g.Steps, st)
		k++
	}
	g.respond()
}

// taskMessage is the position of a task's own message among n messages
// (0 when none is found): the last user message that starts as the
// engine's task message does ("Task ID: goal"). The turns a task inherits
// come before it and hold no such message of its own id.
func taskMessage(task string, n int, at func(int) *model.Message) int {
	prefix := "Task " + task + ": "
	for i := n - 1; i >= 0; i-- {
		if m := at(i); m != nil && m.Role == model.User && strings.HasPrefix(m.Text, prefix) {
			return i
		}
	}
	return 0
}
