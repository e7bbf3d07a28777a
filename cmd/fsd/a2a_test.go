package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// a2aClient is the official A2A JavaScript SDK, pinned.
const a2aClient = "@a2a-js/sdk@1.3.0"

// @a2a-js/sdk's client drives fsd serve's A2A agent: it reads the card,
// streams a turn to its approval's input-required, approves it with a
// message on the task, reads the task, and cancels another task at its
// approval.
//
// Y36: the official client speaks to fsd serve's A2A agent.
func TestA2AClient(t *testing.T) {
	t.Parallel()
	_, u := serveProc(t, markWorkflow(t))
	out, stderr := runJSClient(t, "testdata/a2a/client.mjs", a2aClient, "FSD_A2A_URL="+u.String())
	type state struct{ State int }
	var got struct {
		Card struct {
			Name      string
			Skills    []string
			Streaming bool
			Version   string
		}
		Stream []struct {
			Case  string
			State int
		}
		Done struct {
			State  int
			Answer string
		}
		Got, Waiting, Cancelled state
	}
	t.Logf("client: %s", out)
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client output %q: %v\nstderr:\n%s", out, err, stderr.String())
	}
	// The SDK's TaskState numbers: 3 completed, 5 canceled, 6 input-required.
	const completed, canceled, inputRequired = 3, 5, 6
	if got.Card.Name != "chat" || !slices.Contains(got.Card.Skills, "aa") || !got.Card.Streaming || got.Card.Version != "0.3.0" {
		t.Errorf("card = %+v", got.Card)
	}
	if n := len(got.Stream); n == 0 || got.Stream[0].Case != "task" || got.Stream[n-1].State != inputRequired {
		t.Errorf("stream = %+v, want the task, then its updates up to input-required", got.Stream)
	}
	if got.Done.State != completed || strings.TrimSpace(got.Done.Answer) != "all marked" || got.Got.State != completed {
		t.Errorf("approved task = %+v, tasks/get = %+v", got.Done, got.Got)
	}
	if got.Waiting.State != inputRequired || got.Cancelled.State != canceled {
		t.Errorf("second task %+v, cancelled %+v", got.Waiting, got.Cancelled)
	}
}
