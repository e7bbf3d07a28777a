package natsboard

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/fsdrun/fsd/work"
)

// The JetStream resources fsd uses. Every coordinator and worker of one
// NATS system shares them; runs are told apart by their ids.
const (
	// TaskStream is the work-queue stream of task messages, on subjects
	// fsd.tasks.SKILL.AGENT.
	TaskStream = "FSD_TASKS"
	// ResultsBucket is the key-value bucket of task outcomes, keyed
	// RUN.TASK.ATTEMPT.
	ResultsBucket = "fsd-results"
	// SkillsBucket is the object store of skill files and scripts, each
	// named by its SHA-256.
	SkillsBucket = "fsd-skills"
	// JournalStream is the stream of task transcripts, one message per
	// entry on subjects fsd.journal.RUN.TASK.ATTEMPT: what a worker
	// resumes a redelivered task from (see journal.go).
	JournalStream = "FSD_JOURNAL"

	taskSubjects    = "fsd.tasks"
	eventSubject    = "fsd.events"
	journalSubjects = "fsd.journal"
	approvalSubject = "fsd.approvals"
)

// WireVersion is the version of Message and Outcome, and of what the
// coordinator and workers expect of each other: since 3, a cancel takes
// a queued message off the queue and workers keep the cancels they hear
// (U11). A worker refuses a message of another version (the task fails
// with a message saying so).
const WireVersion = 3

// DefaultMaxDeliveries bounds how often a task message is delivered
// before its attempt fails softly.
const DefaultMaxDeliveries = 5

// DefaultAckWait is how long a worker may go silent (no heartbeat) before
// its task is delivered to another worker.
const DefaultAckWait = 30 * time.Second

// retention is how long results, journals and skill objects are kept: long enough
// to resume a run a day later, short enough not to grow without bound.
const retention = 7 * 24 * time.Hour

// Message is a task message on the work queue: one attempt of one task.
//
// S6: never credentials: a worker calls the model with its own keys.
type Message struct {
	V int `json:"v"`
	work.Attempt
	// Bundle is the SHA-256 of the skill's bundle index and Manifest the
	// manifest's path inside it ("" for the default worker).
	Bundle   string `json:"bundle,omitempty"`
	Manifest string `json:"manifest,omitempty"`
	// Script is the SHA-256 of the scripted model's script, when the
	// workflow has one.
	Script     string `json:"script,omitempty"`
	ScriptName string `json:"script-name,omitempty"`
	// Events is the subject the worker reports the task's events on.
	Events string `json:"events"`
	// Approvals is the subject the worker asks the coordinator on about
	// calls that need approval (request/reply); "" when the coordinator
	// answers none (the worker rejects such calls).
	Approvals string `json:"approvals,omitempty"`
	// MaxDeliveries: a delivery beyond it fails the attempt instead of
	// running it again.
	MaxDeliveries int `json:"max-deliveries"`
	// OutcomeKey is the secret the worker MACs the attempt's outcome
	// with (auth.go): the coordinator refuses an outcome without it.
	OutcomeKey string `json:"outcome-key,omitempty"`
}

// Key is the key of the attempt's outcome in ResultsBucket.
func (m *Message) Key() string { return ResultKey(m.Run, m.Task, m.Number) }

// Outcome is the value committed in ResultsBucket: the attempt's result.
type Outcome struct {
	V int `json:"v"`
	work.Outcome
	// Events are the attempt's last events, those its worker had not sent
	// yet when it committed (best effort: left out when they do not fit).
	Events []json.RawMessage `json:"events,omitempty"`
}

// ResultKey is the key of one attempt's outcome.
func ResultKey(run, task string, attempt int) string {
	return token(run) + "." + token(task) + "." + strconv.Itoa(attempt)
}

// taskSubject is the subject of a task message for an agent.
func taskSubject(skill, agent string) string {
	if skill == "" {
		skill = "_"
	}
	if agent == "" {
		agent = "worker"
	}
	return taskSubjects + "." + token(skill) + "." + token(agent)
}

// eventsSubject is where an attempt's events go.
func eventsSubject(run, task string, attempt int) string {
	return eventSubject + "." + ResultKey(run, task, attempt)
}

// approvalsSubject is where an attempt's calls ask for approval.
func approvalsSubject(run, task string, attempt int) string {
	return approvalSubject + "." + ResultKey(run, task, attempt)
}

// token makes s one subject token and key segment: kept as it is when it
// is plain (letters, digits, - and _), else "=" and its base64url, so two
// different strings never share a token.
func token(s string) string {
	plain := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return "=" + strings.TrimRight(base64.URLEncoding.EncodeToString([]byte(s)), "=")
}

// traceHeader is the W3C trace context of ctx (traceparent, tracestate)
// as a task message's NATS headers, so the worker's spans join the
// coordinator's trace under the span that dispatched the task; nil when
// ctx is not traced. Outside the signed body: the trace context steers
// where spans are drawn, never what a worker runs.
//
// O1: the trace context travels with the task.
func traceHeader(ctx context.Context) nats.Header {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil // what Inject would leave empty, without a map made for it
	}
	h := nats.Header{}
	propagation.TraceContext{}.Inject(ctx, headerCarrier(h))
	if len(h) == 0 {
		return nil
	}
	return h
}

// tracedContext is ctx carrying the trace context of a task message's
// headers (none: ctx as it is).
func tracedContext(ctx context.Context, h nats.Header) context.Context {
	if h == nil {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, headerCarrier(h))
}

// headerCarrier keeps the W3C header names as they are written
// (lowercase): NATS headers, unlike HTTP's, are case-sensitive.
type headerCarrier nats.Header

func (h headerCarrier) Get(key string) string { return nats.Header(h).Get(key) }
func (h headerCarrier) Set(key, value string) { nats.Header(h).Set(key, value) }
func (h headerCarrier) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}
