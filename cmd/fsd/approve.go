package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsdrun/fsd/approval"
	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/tool"
)

// addApprovalFlags adds --approve and --approval-timeout to run and resume.
func addApprovalFlags(cmd *cobra.Command, f *runFlags) {
	cmd.Flags().StringVar(&f.approve, "approve", "ask",
		"who answers calls that need approval: ask (the terminal's prompt, or fsd approve; with no terminal on stdin the run stops at the call, exit 4), wait (fsd approve from another shell, however long it takes), auto (approve all), deny (reject all)")
	_ = cmd.RegisterFlagCompletionFunc("approve", cobra.FixedCompletions([]string{"ask", "wait", "auto", "deny"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.Flags().DurationVar(&f.approvalTimeout, "approval-timeout", 0,
		"reject a call that waited this long for approval, e.g. 10m; the model reads that no answer came (default: wait)")
}

// approvalMode checks --approve and --approval-timeout and says what the
// run does with a call that needs approval. ask asks a person at the
// terminal (stdin is one); with nobody there it would wait for ever, so
// the run stops at the call instead (approval.Stop: status waiting, exit
// 4). wait waits for fsd approve from another process, as long as it
// takes: the engine's Ask without the prompt.
func approvalMode(f runFlags, terminal bool) (approval.Mode, error) {
	if f.approvalTimeout < 0 {
		return "", usage("--approval-timeout: %s is negative", f.approvalTimeout)
	}
	switch f.approve {
	case "", string(approval.Ask):
		if terminal {
			return approval.Ask, nil
		}
		return approval.Stop, nil
	case "wait":
		return approval.Ask, nil
	case string(approval.Auto), string(approval.Deny):
		return approval.Mode(f.approve), nil
	}
	return "", usage("unknown --approve %q; want ask, wait, auto or deny", f.approve)
}

// stoppedToWait prints, after a run stopped for approval (approval.Stop),
// the exact commands that go on: fsd approve for each waiting call, then
// fsd resume; the error is the run's last line.
func stoppedToWait(stderr io.Writer, res *engine.Result, pending []runrecord.PendingCall) error {
	flag := runsDirFlag(res)
	for _, p := range pending {
		fmt.Fprintf(stderr, "fsd approve %s %s%s\n", res.RunID, p.Call, flag)
	}
	fmt.Fprintf(stderr, "fsd resume %s%s\n", res.RunID, flag)
	waits := "a call waits"
	if len(pending) != 1 {
		waits = fmt.Sprintf("%d calls wait", len(pending))
	}
	return fail(exitWaiting, "run stopped: %s for approval and no terminal can answer; answer with the fsd approve line above (add --edit JSON or --reject REASON), then go on with fsd resume (or run with --approve wait, auto or deny)", waits)
}

func newApproveCmd() *cobra.Command {
	var (
		runsDir string
		edit    string
		reject  string
	)
	cmd := &cobra.Command{
		Use:   "approve RUN [CALL]",
		Short: "Answer a tool call waiting for approval: approve it, run it with edited arguments, or reject it",
		Long: "Answer a call that waits for approval in RUN.\n" + runArgHelp + `
CALL is the call's id as fsd show and the approval.requested event name it
(host/s2/c1, task:deploy/s1/c1); it may be left out when only one call waits.

The answer is written into the run record; the waiting run picks it up within a
moment and goes on. A run that was stopped while it waited takes the answer when
it is resumed (fsd resume RUN). The first answer to a call stands.`,
		Example: `  fsd approve 8d7f19f8                               # the one waiting call
  fsd approve 8d7f19f8 task:deploy/s1/c1 --edit '{"env": "staging"}'
  fsd approve 8d7f19f8 host/s2/c1 --reject "not during the freeze"`,
		Args:              usageArgs(cobra.RangeArgs(1, 2)),
		ValidArgsFunction: completeRunIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			a := runrecord.Answer{Decision: runrecord.Approved, By: "fsd approve", Time: time.Now()}
			if len(args) == 2 {
				a.Call = args[1]
			}
			switch {
			case cmd.Flags().Changed("edit") && cmd.Flags().Changed("reject"):
				return usage("--edit and --reject exclude each other: edit the arguments and approve, or reject")
			case cmd.Flags().Changed("edit"):
				var buf bytes.Buffer
				if err := json.Compact(&buf, []byte(edit)); err != nil || !strings.HasPrefix(buf.String(), "{") {
					return usage("--edit wants the call's arguments as a JSON object, e.g. '{\"env\": \"staging\"}'")
				}
				a.Decision, a.Args = runrecord.Edited, buf.Bytes()
			case cmd.Flags().Changed("reject"):
				a.Decision, a.Reason = runrecord.Rejected, reject
			}
			return approve(cmd.OutOrStdout(), runsDir, args[0], a)
		},
	}
	cmd.Flags().StringVar(&runsDir, "runs-dir", "", runsDirUsage)
	cmd.Flags().StringVar(&edit, "edit", "", "approve with these arguments instead (a JSON object)")
	cmd.Flags().StringVar(&reject, "reject", "", "reject the call; the model reads the reason")
	return cmd
}

// approve writes an answer into the run record for its waiting run.
func approve(w io.Writer, runsDir, runArg string, a runrecord.Answer) error {
	dir, err := findRun(runsDir, runArg)
	if err != nil {
		return err
	}
	sum, err := runrecord.ReadSummary(dir)
	if err != nil {
		return fail(exitProblems, "%v", err)
	}
	id := filepath.Base(dir)
	if runrecord.IsSession(dir) {
		// An abandoned turn's run.json still lists the calls it waited
		// on; an answer would go nowhere (no resume takes it).
		if file, err := runrecord.ReadSession(dir); err == nil && lastAbandoned(file) && len(sum.Pending) > 0 {
			return fail(exitProblems, "session %s: its last turn was abandoned, so no call of it waits", id)
		}
	}
	if len(sum.Pending) == 0 {
		return fail(exitProblems, "run %s has no call waiting for approval (status %s)", id, sum.Status)
	}
	var p *runrecord.PendingCall
	for i := range sum.Pending {
		if sum.Pending[i].Call == a.Call || (a.Call == "" && len(sum.Pending) == 1) {
			p = &sum.Pending[i]
		}
	}
	if p == nil {
		list := make([]string, len(sum.Pending))
		for i, x := range sum.Pending {
			list[i] = describePending(x)
		}
		if a.Call == "" {
			return usage("run %s has %d calls waiting; name one: %s", id, len(sum.Pending), strings.Join(list, "; "))
		}
		return usage("call %q is not waiting in run %s; waiting: %s", a.Call, id, strings.Join(list, "; "))
	}
	a.Call = p.Call
	if a.Decision == runrecord.Edited && len(p.Schema) > 0 {
		if err := checkEdit(p, a.Args); err != nil {
			return err
		}
	}
	key, err := runrecord.UserKey()
	if err != nil {
		return fail(exitProblems, "approve: %v", err)
	}
	if _, err := runrecord.WriteAnswer(dir, key, a); err != nil {
		if errors.Is(err, runrecord.ErrAnswered) {
			return fail(exitProblems, "call %s of run %s was already answered", a.Call, id)
		}
		return fail(exitProblems, "approve: %v", err)
	}
	fmt.Fprintf(w, "%s %s (%s) in run %s\n", a.Decision, p.Call, p.Tool, id)
	if sum.Status = runrecord.Current(dir, sum); !sum.Going() {
		fmt.Fprintf(w, "the run is not running: fsd resume %s takes the answer\n", id)
	}
	return nil
}

// checkEdit checks edited arguments against the input schema of the
// pending call's tool, as the tool will check them: arguments it would
// refuse are not an answer.
//
// A14: --edit answers only with arguments the schema accepts.
func checkEdit(p *runrecord.PendingCall, args json.RawMessage) error {
	var schema any
	if err := json.Unmarshal(p.Schema, &schema); err != nil {
		return fail(exitProblems, "approve: the input schema run.json lists for %s does not decode: %v", p.Tool, err)
	}
	in, err := tool.CompileInput(p.Tool, schema)
	if err != nil {
		return fail(exitProblems, "approve: the input schema run.json lists for %s does not compile: %v", p.Tool, err)
	}
	if _, res, ok := in.Decode(args); !ok {
		return fail(exitProblems, "--edit: the arguments do not fit %s's input schema, nothing answered: %s", p.Tool, res.Text)
	}
	return nil
}

// describePending names a pending call for a person: id, tool, arguments
// and task.
func describePending(p runrecord.PendingCall) string {
	s := p.Call + " " + p.Tool
	if len(p.Args) > 0 {
		var buf bytes.Buffer
		if json.Compact(&buf, p.Args) == nil {
			s += " " + clipText(buf.String(), 200)
		}
	}
	if p.Task != "" {
		s += " (task " + p.Task + ")"
	}
	return s
}

// clipText cuts s to n characters.
func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
