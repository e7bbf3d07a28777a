package runrecord

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// The approval files of a run record. A call that needs a person's
// approval is listed in run.json (Summary.Pending) while it waits. Whoever
// answers it — the live board's prompt, `fsd approve` from another shell,
// --approve auto, the approval timeout — writes one answer file under
// ApprovalsDir, created exclusively: the first answer wins and the others
// are told the call was already answered. The running fsd polls for the
// file (it never needs the run folder's lock to be shared), and before it
// acts on an answer it appends an "answered" line to ApprovalsFile and
// syncs it. On resume that line tells a call that may have run (the
// in-doubt rules apply) from one that was never approved (it waits again).
const (
	ApprovalsDir  = "approvals"       // approvals/<hash of the call id>.json: Answer
	ApprovalsFile = "approvals.jsonl" // ApprovalLine: requests and the answers the run acted on
)

// The decisions of an Answer.
const (
	Approved = "approved"
	Edited   = "edited" // approved with edited arguments
	Rejected = "rejected"
)

// PendingCall is a tool call waiting for approval.
type PendingCall struct {
	// Call is the call's id, as its command sees it in FSD_CALL_ID:
	// GEN/sSTEP/cN with GEN host, task:ID or task:ID#ATTEMPT. It is stable
	// across resume.
	Call  string          `json:"call"`
	Tool  string          `json:"tool"`
	Args  json.RawMessage `json:"args,omitempty"`
	Task  string          `json:"task,omitempty"`
	Agent string          `json:"agent,omitempty"`
	Since time.Time       `json:"since"`
}

// Answer is the answer to one pending call.
type Answer struct {
	Call     string `json:"call"`
	Decision string `json:"decision"` // Approved, Edited or Rejected
	// Args are the edited arguments (Edited).
	Args json.RawMessage `json:"args,omitempty"`
	// Reason says why a call was rejected; the model reads it.
	Reason string `json:"reason,omitempty"`
	// By says who answered: terminal, fsd approve, auto, deny, timeout.
	By   string    `json:"by,omitempty"`
	Time time.Time `json:"time"`
}

// ApprovalLine is one line of ApprovalsFile.
type ApprovalLine struct {
	Kind string `json:"kind"` // "requested" or "answered"
	PendingCall
	Answer *Answer `json:"answer,omitempty"`
}

// ErrAnswered is returned by WriteAnswer when the call already has an
// answer.
var ErrAnswered = errors.New("already answered")

// AnswerPath is the file of the answer to call in the record dir.
func AnswerPath(dir, call string) string {
	sum := sha256.Sum256([]byte(call))
	return filepath.Join(dir, ApprovalsDir, hex.EncodeToString(sum[:16])+".json")
}

// WriteAnswer records an answer in the record dir. The file appears whole
// or not at all (written aside, then linked into place), and only once:
// when the call has an answer already, WriteAnswer returns ErrAnswered and
// changes nothing.
//
// A4: a call's answer appears whole and only once.
func WriteAnswer(dir string, a Answer) error {
	switch a.Decision {
	case Approved, Rejected:
	case Edited:
		if !json.Valid(a.Args) {
			return fmt.Errorf("edited arguments are not JSON")
		}
	default:
		return fmt.Errorf("unknown decision %q", a.Decision)
	}
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	path := AnswerPath(dir, a.Call)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".answer-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// A hard link fails when the target exists: the exclusive, atomic
	// create a rename cannot give.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("call %s: %w", a.Call, ErrAnswered)
		}
		return err
	}
	return nil
}

// ReadAnswer reads the answer to call; ok is false while there is none.
func ReadAnswer(dir, call string) (a Answer, ok bool, err error) {
	b, err := os.ReadFile(AnswerPath(dir, call))
	if errors.Is(err, os.ErrNotExist) {
		return Answer{}, false, nil
	}
	if err != nil {
		return Answer{}, false, err
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return Answer{}, false, fmt.Errorf("answer to %s: %w", call, err)
	}
	if a.Call != call {
		return Answer{}, false, fmt.Errorf("answer file %s is for call %q, not %q", AnswerPath(dir, call), a.Call, call)
	}
	return a, true, nil
}

// ReadAnswered reads the "answered" lines of ApprovalsFile in the record
// dir, in order: the answers the run acted on, so a call among them may
// have run. A missing file has none; a line that does not decode is
// skipped, as a torn last line is.
//
// A5: the calls an earlier process acted on, in doubt on resume.
func ReadAnswered(dir string) ([]ApprovalLine, error) {
	var out []ApprovalLine
	err := readLines(filepath.Join(dir, ApprovalsFile), func(b []byte) error {
		var l ApprovalLine
		if json.Unmarshal(b, &l) == nil && l.Kind == "answered" && l.Answer != nil {
			out = append(out, l)
		}
		return nil
	})
	return out, err
}
