package runrecord

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/fsdrun/fsd/journal"
)

// A session is a conversation kept across turns: one run record (its
// folder is the session's, named by the session) whose journal grows turn
// by turn, and session.json, which says where each turn starts in the
// host's transcript and how it ended.
const (
	// SessionsFolder, beside RunsFolder under ProjectFolder, holds the
	// sessions, one folder each.
	SessionsFolder = "sessions"
	// SessionFile is a session's list of turns.
	SessionFile = "session.json"
	// SessionLockFile is locked by the one process that writes the
	// session; it holds that process's id.
	SessionLockFile = "session.lock"
)

// SessionsDirFor is the sessions folder of the project dir belongs to:
// SessionsFolder beside the runs folder RunsDirFor finds.
func SessionsDirFor(dir string) string {
	return filepath.Join(filepath.Dir(RunsDirFor(dir)), SessionsFolder)
}

// ErrBadSessionName is wrapped when a session name is not one.
var ErrBadSessionName = errors.New("bad session name")

// CheckSessionName checks a session name: a run id, since it names the
// session's run (letters, digits, '.', '_' and '-', starting with a letter
// or digit, at most 64).
func CheckSessionName(name string) error {
	ok := name != "" && len(name) <= 64
	for i, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("%w %q: use letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64", ErrBadSessionName, name)
	}
	return nil
}

// TurnStatus is how a turn ended, as session.json says.
type TurnStatus string

// The statuses of a turn. A turn that is not over has none: run.json
// says whether its process is still at it or it was interrupted.
const (
	TurnFinished TurnStatus = "finished"
	TurnFailed   TurnStatus = "failed"
	// TurnAbandoned: the turn was interrupted and given up (fsd sessions
	// abandon): its calls left without a result read that they were not
	// run, and the next turn goes on after it.
	TurnAbandoned TurnStatus = "abandoned"
)

// SkillAt is a skill at a revision, as a turn left it loaded.
type SkillAt struct {
	ID       string `json:"id"`
	Version  string `json:"version,omitempty"`
	Revision string `json:"revision"`
}

// Turn is one turn of a session.
type Turn struct {
	Input   string    `json:"input"`
	Started time.Time `json:"started"`
	// Entry and Message are where the turn starts in the host's
	// transcript: its entries and its messages before the turn's first.
	Entry   int `json:"entry"`
	Message int `json:"message"`
	// Dropped are the skills the turn unloaded as it started, since they
	// changed or left the project after the turn before.
	Dropped []string `json:"dropped,omitempty"`
	// Digests are what the turn was made from (workflow, script, skills).
	Digests journal.Digests `json:"digests,omitempty"`
	// Skills are the project's skills' revisions when the turn started.
	Skills   map[string]string `json:"skills,omitempty"`
	Status   TurnStatus        `json:"status,omitempty"`
	Finished time.Time         `json:"finished,omitzero"`
	// Loaded are the host's loaded skills when the turn ended, least
	// recently read first.
	Loaded []SkillAt `json:"loaded,omitempty"`
}

// Session is session.json.
type Session struct {
	Name  string `json:"name"`
	Turns []Turn `json:"turns"`
}

// ReadSession reads the session.json in dir; a folder without one is a
// session with no turn.
func ReadSession(dir string) (Session, error) {
	s := Session{Name: filepath.Base(dir)}
	b, err := os.ReadFile(filepath.Join(dir, SessionFile))
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: %w", filepath.Join(dir, SessionFile), err)
	}
	s.Name = filepath.Base(dir)
	return s, nil
}

// WriteSession replaces the session.json in dir atomically.
func WriteSession(dir string, s Session) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(dir, SessionFile)
	if err := os.WriteFile(path+".tmp", append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("session: %w", err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return fmt.Errorf("session: %w", err)
	}
	return nil
}

// IsSession reports whether dir is a session's folder.
func IsSession(dir string) bool {
	return exists(filepath.Join(dir, SessionLockFile))
}

// ListSessions returns the names of the sessions under sessionsDir,
// sorted; none when the folder is not there.
func ListSessions(sessionsDir string) ([]string, error) {
	entries, err := os.ReadDir(sessionsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && IsSession(filepath.Join(sessionsDir, e.Name())) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}
