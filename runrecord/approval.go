package runrecord

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
	// Schema is the tool's input JSON Schema: fsd approve --edit checks
	// the edited arguments against it before it answers.
	Schema json.RawMessage `json:"schema,omitempty"`
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
	// Seal is the answer's seal (Key.Seal) for its run: the answer is
	// fsd's. A line of ApprovalsFile keeps it, so a resume verifies
	// what the run acted on too.
	Seal string `json:"seal,omitempty"`
}

// MaxAnswerBytes bounds an answer file: edited arguments and a reason,
// not a payload.
const MaxAnswerBytes = 1 << 20

// ErrForged is wrapped when a file in ApprovalsDir is not an answer fsd
// wrote for this run (no seal, a wrong one, not a regular file, too big).
var ErrForged = errors.New("not an answer fsd wrote for this run")

// sealKind is what an answer's seal is of (Key.Seal's kind).
const sealKind = "approval answer"

// sealed is a with its seal for the run in dir under key.
func sealed(dir string, key Key, a Answer) (Answer, error) {
	a.Seal = ""
	b, err := json.Marshal(a)
	if err != nil {
		return Answer{}, err
	}
	a.Seal = key.Seal(folderID(dir), sealKind, b)
	return a, nil
}

// VerifyAnswer reports whether a carries its seal for the run in dir.
func VerifyAnswer(dir string, key Key, a Answer) bool {
	seal := a.Seal
	a.Seal = ""
	b, err := json.Marshal(a)
	return err == nil && key.Verify(folderID(dir), sealKind, b, seal)
}

// folderID is the run id a record folder names: its base name, as a
// resume takes it (a relative or "." path is made absolute first).
func folderID(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return filepath.Base(dir)
}

// ApprovalLine is one line of ApprovalsFile.
type ApprovalLine struct {
	// Kind is "requested", "answered", or "granted": a call that ran
	// without asking because a loaded skill's allowed-tools lists it. A
	// granted line is an account, not an answer: a resume decides the
	// call again.
	Kind string `json:"kind"`
	PendingCall
	Answer *Answer `json:"answer,omitempty"`
	Grant  *Grant  `json:"grant,omitempty"`
}

// Grant says which skill's allowed-tools let a call run without asking,
// and the entry that matched.
type Grant struct {
	Skill string `json:"skill"`
	Rule  string `json:"rule"`
}

// String is how the record and the progress lines say it.
func (g Grant) String() string {
	return "allowed by skill " + g.Skill + "'s allowed-tools (" + g.Rule + ")"
}

// ErrAnswered is returned by WriteAnswer when the call already has an
// answer.
var ErrAnswered = errors.New("already answered")

// AnswerPath is the file of the answer to call in the record dir.
func AnswerPath(dir, call string) string {
	sum := sha256.Sum256([]byte(call))
	return filepath.Join(dir, ApprovalsDir, hex.EncodeToString(sum[:16])+".json")
}

// WriteAnswer records an answer in the record dir, sealed with key for
// its run, and returns it as recorded. The file appears whole or not at
// all (written aside, then linked into place), and only once: when the
// call has an answer already, WriteAnswer returns ErrAnswered and
// changes nothing.
//
// A4: a call's answer appears whole and only once.
func WriteAnswer(dir string, key Key, a Answer) (Answer, error) {
	switch a.Decision {
	case Approved, Rejected:
	case Edited:
		if !json.Valid(a.Args) {
			return a, fmt.Errorf("edited arguments are not JSON")
		}
	default:
		return a, fmt.Errorf("unknown decision %q", a.Decision)
	}
	a, err := sealed(dir, key, a)
	if err != nil {
		return a, err
	}
	b, err := json.Marshal(a)
	if err != nil {
		return a, err
	}
	path := AnswerPath(dir, a.Call)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return a, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".answer-*")
	if err != nil {
		return a, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return a, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return a, err
	}
	if err := tmp.Close(); err != nil {
		return a, err
	}
	// A hard link fails when the target exists: the exclusive, atomic
	// create a rename cannot give.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return a, fmt.Errorf("call %s: %w", a.Call, ErrAnswered)
		}
		return a, err
	}
	return a, nil
}

// ReadAnswer reads the answer to call; ok is false while there is none.
// It never blocks on the file (a FIFO is refused at once) and takes only
// a regular file, not through a symlink, of at most MaxAnswerBytes, whose
// seal verifies under key (else an error wrapping ErrForged).
//
// A13: an answer counts only if fsd wrote it for this run.
func ReadAnswer(dir string, key Key, call string) (a Answer, ok bool, err error) {
	path := AnswerPath(dir, call)
	b, err := readRegular(path, MaxAnswerBytes)
	if errors.Is(err, os.ErrNotExist) {
		return Answer{}, false, nil
	}
	if err != nil {
		return Answer{}, false, err
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return Answer{}, false, fmt.Errorf("answer to %s: %s: %w", call, path, ErrForged)
	}
	if a.Call != call {
		return Answer{}, false, fmt.Errorf("answer file %s is for call %q, not %q: %w", path, a.Call, call, ErrForged)
	}
	if !VerifyAnswer(dir, key, a) {
		return Answer{}, false, fmt.Errorf("answer to %s: %s: %w (its seal does not verify; answer with fsd approve, as the user who runs it)", call, path, ErrForged)
	}
	return a, true, nil
}

// readRegular reads the regular file at path, of at most max bytes,
// without following a symlink or waiting on a FIFO. Anything else there
// is an error wrapping ErrForged; a missing file wraps os.ErrNotExist.
func readRegular(path string, max int64) ([]byte, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is a %s, not a file: %w", path, fileKind(st.Mode()), ErrForged)
	}
	f, err := os.OpenFile(path, openFlags, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (%w)", path, ErrForged, err)
	}
	defer f.Close()
	// What was opened may not be what Lstat saw.
	if st, err = f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file: %w", path, ErrForged)
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%s has %d bytes, more than an answer's %d: %w", path, st.Size(), max, ErrForged)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s has more than an answer's %d bytes: %w", path, max, ErrForged)
	}
	return b, nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m.IsDir():
		return "folder"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// ReadGranted reads the "granted" lines of ApprovalsFile in the record
// dir, in order: the calls that ran without asking, and why.
func ReadGranted(dir string) ([]ApprovalLine, error) {
	var out []ApprovalLine
	err := readLines(filepath.Join(dir, ApprovalsFile), func(b []byte) error {
		var l ApprovalLine
		if json.Unmarshal(b, &l) == nil && l.Kind == "granted" && l.Grant != nil {
			out = append(out, l)
		}
		return nil
	})
	return out, err
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
