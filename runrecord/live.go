package runrecord

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsdrun/fsd/internal/proc"
	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/model"
)

// Held reports whether a process holds the lock of the run folder dir:
// the run, or a resume of it, is at work there. The kernel drops the
// lock when its holder dies however it dies, so a killed run is not held
// whatever run.json still says. Where locks exclude nothing
// (journal.LocksHold is false) the run.json's process id decides.
//
// To find out, Held takes the lock and gives it back at once: a writer
// that tries to take it in that instant tries again (journal.Lock).
func Held(dir string) bool {
	if !journal.LocksHold {
		s, err := ReadSummary(dir)
		return err == nil && s.Going() && proc.Alive(s.PID)
	}
	l, err := journal.TryLock(dir)
	if errors.Is(err, journal.ErrLocked) {
		return true
	}
	if err == nil {
		l.Unlock()
	}
	return false
}

// Current is the status of the run in dir recorded as s, as a reader
// shows it: a live status (running, waiting) holds only while a process
// holds the folder (Held); otherwise the process is gone and the run is
// Interrupted (fsd resume goes on from its journal) — unless it stopped
// to wait for an approval (waiting, and it wrote when it stopped): that
// run still waits, for fsd approve and then fsd resume.
//
// R12: liveness is the folder's lock, not run.json.
func Current(dir string, s Summary) Status {
	if s.stoppedToWait() {
		return Waiting
	}
	if s.Status.Live() && !Held(dir) {
		return Interrupted
	}
	return s.Status
}

// ReadRun reads the run in dir for a listing: run.json with its Current
// status and the folder's name as its id. A run's folder without run.json
// (its run was killed before writing it, or is being created now: the
// folder holds resolved.json or is named as fsd names runs) is listed
// too, as Incomplete (Running while a process holds it), started when
// its id says (else when the folder was made). An error wrapping
// os.ErrNotExist means dir is no run's folder.
func ReadRun(dir string) (Summary, error) {
	s, err := ReadSummary(dir)
	switch {
	case err == nil:
		s.ID = filepath.Base(dir) // the record is data: the folder names the run
		s.Status = Current(dir, s)
		if s.Status.Live() {
			liveUsage(dir, &s)
		}
		return s, nil
	case !errors.Is(err, os.ErrNotExist):
		return s, err
	}
	st, serr := os.Stat(dir)
	if serr != nil || !st.IsDir() {
		return Summary{}, err
	}
	s = Summary{ID: filepath.Base(dir), Status: Incomplete, Started: st.ModTime()}
	t, named := idTime(s.ID)
	if _, rerr := os.Stat(filepath.Join(dir, ResolvedFile)); rerr != nil && !named {
		return Summary{}, err // not a run's: leave it alone
	}
	if named {
		s.Started = t
	}
	if Held(dir) {
		s.Status = Running
		liveUsage(dir, &s)
	}
	return s, nil
}

// liveUsage sets a running run's tokens and cost to what its model calls
// have used so far: run.json has them only once the run ends, and a
// listing of a running run should not read 0.
func liveUsage(dir string, s *Summary) {
	var u model.Usage
	var cost float64
	if Responses(dir, func(l Line) {
		if l.Usage != nil {
			u = u.Add(*l.Usage)
		}
		cost += l.Cost
	}) != nil {
		return
	}
	if int64(u.InputTokens+u.OutputTokens) > s.InputTokens+s.OutputTokens {
		s.SetUsage(u)
		s.Cost = cost
	}
}

// idTime is the start time a run id begins with (20061102-150405-…, UTC).
func idTime(id string) (time.Time, bool) {
	const layout = "20060102-150405"
	if len(id) <= len(layout) || id[len(layout)] != '-' {
		return time.Time{}, false
	}
	t, err := time.Parse(layout, id[:len(layout)])
	return t, err == nil
}

// isListed says whether a runs folder's entry is a run's folder: every
// folder fsd made there, not a hidden one.
func isListed(e os.DirEntry) bool { return e.IsDir() && !strings.HasPrefix(e.Name(), ".") }
