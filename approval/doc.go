// Package approval stands before the tool calls that need a person's
// approval (`approve: always | first | never`): it resolves a call's
// policy, waits for the answer — from a person (Run.Answer, the CLI's
// prompt, `fsd approve` writing into the run record), from the mode
// (--approve auto or deny) or from the timeout — and journals the answer
// in approvals.jsonl before the call may run. A task that waits gives its
// board slot back meanwhile.
//
// One Gate serves a run, shared by every generator. On a worker process
// (`fsd worker`) a Gate made by ForWorker decides nothing itself: it asks
// the run over a work.Approver, and the run answers with Remote — the
// same gate, prompt, answer files, timeout and journal as for a call made
// in its own process.
//
// It does not run calls, replay journals or decide what is in doubt (the
// engine's generator does, with the Result it is given), carry requests
// between processes (a transport such as natsboard does), or own the
// record's layout (runrecord does: PendingCall, Answer, the answer files).
package approval
