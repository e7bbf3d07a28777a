package runrecord

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"time"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/transcript"
)

// The files of a run record.
const (
	RunFile      = "run.json"       // Summary: status, times, answer or error, tokens
	WorkflowFile = "workflow.yaml"  // the workflow file's bytes as read, NATS credentials redacted
	ResolvedFile = "resolved.json"  // the workflow as resolved: defaults filled, skills found
	EventsFile   = "events.jsonl"   // every event, one a line
	BoardFile    = "board.json"     // every task with status and result
	RequestsFile = "requests.jsonl" // what each model call was sent (Line)
	JournalFile  = "journal.jsonl"  // every generator's transcript entries (JournalLine)
	// HostFile and TasksDir held the host's and each worker's transcript
	// in records made before the journal; GenName still names generators
	// by them.
	HostFile = "transcript.jsonl"
	TasksDir = "tasks"
	// WorkspaceDir is the run's workspace when neither the workflow nor
	// the command line names one: a fresh folder in the record, so a run
	// touches nothing of the user's unless asked.
	WorkspaceDir = "workspace"
)

// Summary is run.json: what `fsd runs` lists and `fsd resume` starts from.
type Summary struct {
	ID string `json:"id"`
	// Workflow is the workflow file's absolute path ("" for one built in
	// code): what fsd resume runs, from any folder, when Seal verifies.
	Workflow string `json:"workflow"`
	// Status says where the run is; a live one (Status.Live) whose PID
	// is gone was interrupted too (killed).
	Status      Status    `json:"status"`
	PID         int       `json:"pid"`
	Started     time.Time `json:"started"`
	Finished    time.Time `json:"finished,omitzero"`
	Input       string    `json:"input"`
	Answer      string    `json:"answer,omitempty"`
	Error       string    `json:"error,omitempty"`
	InputTokens int64     `json:"input_tokens"`
	// CachedInputTokens of InputTokens were read from the provider's
	// prompt cache; CacheWriteTokens were written to it.
	CachedInputTokens int64 `json:"cached_input_tokens,omitempty"`
	CacheWriteTokens  int64 `json:"cache_write_tokens,omitempty"`
	OutputTokens      int64 `json:"output_tokens"`
	// TokensEstimated: some of the counts are fsd's o200k estimates, not
	// a provider's (the scripted model reports none).
	TokensEstimated bool `json:"tokens_estimated,omitempty"`
	// Cost prices the tokens with the workflow's prices (0: none given),
	// in the currency they are written in.
	Cost float64 `json:"cost,omitempty"`
	// Agents is what each agent's tasks used ("worker": the default
	// worker); a resumed run's budgets go on from it.
	Agents map[string]AgentUsage `json:"agents,omitempty"`
	// Seed seeds the handle source, so a resumed run draws the same
	// handles. It is not a secret from the run's owner: handles guard
	// against the model guessing, not against the person who ran it.
	Seed string `json:"seed"`
	// HandleKey, when Seed is "", names the project handle key the run
	// derived its handles with (a digest, never the key): a resume
	// derives them again with the same key.
	HandleKey string            `json:"handle_key,omitempty"`
	Resumed   int               `json:"resumed,omitempty"`
	Meta      map[string]string `json:"meta,omitempty"`
	// Digests of what the run is made from; a resume refuses to run
	// from files that differ (engine.ErrChanged).
	Digests journal.Digests `json:"digests,omitempty"`
	// Workspace is the run's workspace folder, absolute: a resume works
	// there.
	Workspace string `json:"workspace,omitempty"`
	// Seal is SealSummary's seal of Workflow, Digests and Workspace: a resume runs
	// the workflow run.json names only when fsd wrote that name for this
	// run.
	Seal string `json:"seal,omitempty"`
	// Pending are the calls waiting for approval, oldest first; they stay
	// listed when the run is stopped while they wait (answer them with
	// fsd approve, then fsd resume).
	Pending []PendingCall `json:"pending,omitempty"`
}

// ShownWorkflow is how a person in this working folder names the
// workflow: Workflow relative to it (run.json keeps the absolute path,
// so that a resume finds it from anywhere).
func (s Summary) ShownWorkflow() string {
	if !filepath.IsAbs(s.Workflow) {
		return s.Workflow
	}
	wd, err := os.Getwd()
	if err != nil {
		return s.Workflow
	}
	if rel, err := filepath.Rel(wd, s.Workflow); err == nil {
		return rel
	}
	return s.Workflow
}

// AgentUsage is what one agent's model calls used, all its tasks together.
type AgentUsage struct {
	model.Usage
	Cost float64 `json:"cost,omitempty"`
}

// Usage is the run's four token figures as one model.Usage.
func (s *Summary) Usage() model.Usage {
	return model.Usage{InputTokens: int(s.InputTokens), OutputTokens: int(s.OutputTokens),
		CachedInputTokens: int(s.CachedInputTokens), CacheWriteTokens: int(s.CacheWriteTokens), Estimated: s.TokensEstimated}
}

// SetUsage sets the run's four token figures.
func (s *Summary) SetUsage(u model.Usage) {
	s.InputTokens, s.OutputTokens = int64(u.InputTokens), int64(u.OutputTokens)
	s.CachedInputTokens, s.CacheWriteTokens = int64(u.CachedInputTokens), int64(u.CacheWriteTokens)
	s.TokensEstimated = u.Estimated
}

// The kinds of requests.jsonl lines.
const (
	KindBlob     = "blob"
	KindRequest  = "request"
	KindResponse = "response"
)

// Line is one line of requests.jsonl. A request is kept by reference, not
// copied: its window is a list of spans of the generator's transcript,
// and its context block and each tool definition are blobs written once
// per run and named by hash. A step therefore costs one request line (a
// few hundred bytes) plus whatever context or tools are new; see
// docs/design.md for the measured budget.
//
//	{"kind":"blob","hash":"…","text":"…"}                 a context block
//	{"kind":"blob","hash":"…","tool":{…}}                 a tool definition
//	{"kind":"request","gen":"tasks/t1.jsonl","step":0,…}  before the model call
//	{"kind":"response","gen":"tasks/t1.jsonl","step":0,…} after it
type Line struct {
	Kind string `json:"kind"`

	// Blob.
	Hash string    `json:"hash,omitempty"`
	Text *string   `json:"text,omitempty"`
	Tool *ToolText `json:"tool,omitempty"`

	// Request and response: the generator (its transcript file, relative
	// to the record) and the 0-based step.
	Gen   string    `json:"gen,omitempty"`
	Task  string    `json:"task,omitempty"`
	Agent string    `json:"agent,omitempty"`
	Step  int       `json:"step"`
	Time  time.Time `json:"time,omitzero"`

	// Request.
	Context string            `json:"context,omitempty"` // blob hash
	Tools   []string          `json:"tools,omitempty"`   // blob hashes, in order
	Window  []transcript.Span `json:"window,omitempty"`
	// Stubs replace the text of window messages (by transcript position)
	// whose skill was unloaded (H4).
	Stubs map[int]string `json:"stubs,omitempty"`
	// Status is the volatile message the request carried after its
	// window (model.Message.Volatile: the board's status).
	Status string `json:"status,omitempty"`
	// At is the transcript position of the step's response: its messages
	// run from At to the next step's At.
	At int `json:"at"`
	// Tokens are the request's o200k counts by part. A response line
	// carries them when its usage is an estimate; request lines of
	// records before that carried them always.
	Tokens *event.Tokens `json:"tokens,omitempty"`
	// Held is what a request under a token budget reserved of it: its
	// o200k count as input when an input budget applies (else 0), its
	// answer's bound as output. Until its
	// response line follows, a resume counts it as spent.
	Held *model.Usage `json:"held,omitempty"`

	// Response: the call's usage (the one every total adds up) and its
	// cost by the workflow's prices.
	Usage *model.Usage `json:"usage,omitempty"`
	Cost  float64      `json:"cost,omitempty"`
	Error string       `json:"error,omitempty"`
}

// ToolText is a tool definition as sent, its schema kept as text so it
// reads back byte for byte.
type ToolText struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Parameters  string `json:"parameters"`
}

// Def is the model.ToolDef the tool was sent as.
func (t ToolText) Def() model.ToolDef {
	return model.ToolDef{Name: t.Name, Description: t.Description, Parameters: []byte(t.Parameters)}
}

// TextHash names a context blob.
func TextHash(text string) string { return hash("t", text) }

// ToolHash names a tool blob.
func ToolHash(d model.ToolDef) string {
	return hash("f", d.Name+"\x00"+d.Description+"\x00"+string(d.Parameters))
}

func hash(prefix, s string) string {
	sum := sha256.Sum256([]byte(s))
	return prefix + hex.EncodeToString(sum[:12])
}
