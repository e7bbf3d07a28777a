package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/runrecord"
)

// Events streams the session's events after id after: those of its
// record, read from events.jsonl (an event's id is its line there), then
// those of the turn running at the call, as they come. The engine emits
// only what itemVisibility.client lets stream (a worker with client:
// false shows only its task's lifecycle), so the stream is the live
// board's.
//
// Y2: ids are lines of events.jsonl, live and replayed alike. Y8: the
// stream is the engine's client stream, filtered by item-visibility.
func (s *Server) Events(ctx context.Context, session string, after int64) (<-chan Event, error) {
	return s.stream(ctx, session, after, true)
}

// Recorded streams the session's events after id after that precede the
// turn running at the call, from its record: those of the turns that have
// ended.
func (s *Server) Recorded(ctx context.Context, session string, after int64) (<-chan Event, error) {
	return s.stream(ctx, session, after, false)
}

// stream is Events, or with follow false Recorded.
func (s *Server) stream(ctx context.Context, session string, after int64, follow bool) (<-chan Event, error) {
	if !s.exists(session) {
		return nil, fmt.Errorf("%w: session %s", ErrNotFound, session)
	}
	s.mu.Lock()
	t := s.live[session]
	s.mu.Unlock()
	// A running turn's events come from memory: the record gets them a
	// flush later. What the record held before it comes from the file.
	limit := int64(-1)
	if t != nil {
		limit = t.base
	}
	out := make(chan Event)
	go func() {
		defer close(out)
		next, ok := s.replay(ctx, session, after, limit, out)
		if !ok || t == nil || !follow {
			return
		}
		s.follow(ctx, t, next, out)
	}()
	return out, nil
}

// replay sends the recorded events with after < id <= limit (-1: all),
// and returns the last id sent (or after).
func (s *Server) replay(ctx context.Context, session string, after, limit int64, out chan<- Event) (int64, bool) {
	dir := s.dir(session)
	f, err := os.Open(filepath.Join(dir, runrecord.EventsFile))
	if err != nil {
		return after, ctx.Err() == nil
	}
	defer f.Close()
	turns, _ := runrecord.ReadSession(dir)
	r := bufio.NewReaderSize(f, 64<<10)
	var id int64
	for limit < 0 || id < limit {
		line, err := r.ReadBytes('\n')
		if err != nil {
			break // the end, or a torn last line not yet whole
		}
		id++
		if id <= after {
			continue
		}
		var e event.Event
		if json.Unmarshal(line, &e) != nil {
			continue
		}
		select {
		case out <- Event{ID: id, Turn: turnOf(turns.Turns, e), Event: e}:
			after = id
		case <-ctx.Done():
			return after, false
		}
	}
	return after, true
}

// follow sends the running turn's events after id after until the turn
// ends and all are sent.
func (s *Server) follow(ctx context.Context, t *turn, after int64, out chan<- Event) {
	for {
		s.mu.Lock()
		var batch []Event
		if i := after - t.base; i < int64(len(t.events)) {
			batch = t.events[max(i, 0):]
		}
		changed := t.changed
		ended := isDone(t.done)
		s.mu.Unlock()
		for _, e := range batch {
			select {
			case out <- e:
				after = e.ID
			case <-ctx.Done():
				return
			}
		}
		if len(batch) > 0 {
			continue
		}
		if ended {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

func isDone(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// turnOf is the turn a recorded event belongs to: the last turn started
// by its time. A turn's run.started comes just before session.json
// records the turn's start, so it belongs to the turn after the last one
// started by its time, when there is one; a resumed turn's run.started
// comes after its start.
func turnOf(turns []runrecord.Turn, e event.Event) int {
	n := 0
	for n < len(turns) && !turns[n].Started.After(e.Time) {
		n++
	}
	if e.Type == event.RunStarted && n < len(turns) {
		n++
	}
	return max(n, 1)
}
