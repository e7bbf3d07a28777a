package engine

// A session's turn: the turns before it restated from the journal, the
// skills that changed since dropped, then the user's message live.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/transcript"
)

// turnOf is what a run that is a session's turn knows of the session.
type turnOf struct {
	s *Session
	// journal is the session's record so far; nil before its first turn.
	journal *Replay
	// digests are what this turn is made from (Execute sets them).
	digests journal.Digests
	// dryRun builds the turn's first request only (NextRequest).
	dryRun bool
	// host is the host's world once the turn runs, for endTurn.
	host *hostEnv
	// started: the turn is in session.json, so endTurn records its end.
	started bool
}

// sessionTurn runs the host on a session's next turn (or the interrupted
// one it resumes).
//
// Q2: the turns before are restated, never run: model responses and
// programs' results come from the journal. Q3: one transcript spans the
// turns, so the window's cap and its whole turns do too. Q7: each turn
// records the digests it was made from.
func (r *Run) sessionTurn(ctx context.Context, g *generator, h *hostEnv, input string) (string, error) {
	st := r.opts.session
	st.s.mu.Lock()
	turns := slices.Clone(st.s.file.Turns)
	st.s.mu.Unlock()
	var cur *runrecord.Turn // the interrupted turn this run resumes
	past := turns
	if n := len(turns); r.opts.Resume != nil && n > 0 && turns[n-1].Status == "" {
		cur, past = &turns[n-1], turns[:n-1]
	}
	var msgs []model.Message
	var ents []transcript.Entry
	if g.journal != nil {
		msgs, ents = g.journal.msgs, g.journal.ents
	}
	if err := r.restate(ctx, g, h, past, cur, msgs); err != nil {
		return "", err
	}
	// The record's transcript takes the earlier turns' entries as they
	// are, whatever restating them made of them: they are on disk.
	tr := g.tr
	upto := len(ents)
	if cur != nil {
		upto = min(cur.Entry, upto)
	}
	if err := tr.AppendEntries(ents[:upto]); err != nil {
		return "", fmt.Errorf("session %s: journal %w", st.s.Name, err)
	}
	if cur == nil {
		// An abandoned turn's calls that have no result get one, so the
		// conversation the model reads is whole.
		for _, c := range tr.InFlight() {
			if err := tr.AppendMessage(model.Message{Role: model.Tool, CallID: c.ID, Name: c.Name, Text: notRunText, IsError: true}); err != nil {
				return "", err
			}
		}
	}
	n := len(turns) + 1
	t := runrecord.Turn{Input: input, Started: r.now(), Entry: len(tr.Entries()), Message: tr.Len(), Digests: st.digests, Skills: map[string]string{}}
	for _, s := range r.project.Skills {
		t.Skills[s.ID] = s.Revision()
	}
	if cur != nil {
		n, t = len(turns), *cur
	} else {
		t.Dropped = changedSince(lastTurn(past), h.mgr)
		if !st.dryRun {
			st.s.mu.Lock()
			st.s.file.Turns = append(st.s.file.Turns, t)
			err := runrecord.WriteSession(st.s.dir, st.s.file)
			st.s.mu.Unlock()
			if err != nil {
				return "", err
			}
		}
	}
	st.started = !st.dryRun
	g.turn, g.caller.Turn, g.caller.Input = n, n, input
	dropSkills(h, lastTurn(past), t.Dropped, tr)
	if err := g.add(model.Message{Role: model.User, Text: input}); err != nil {
		return "", err
	}
	if st.dryRun {
		return "", nil
	}
	st.host = h
	// Q23: strictness is checked once the turn is in session.json, so the
	// turn it fails is recorded as that turn.
	if err := r.strict.skipped(r.project.Skipped); err != nil {
		return "", err
	}
	g.replay = newCursor(g.journal, tr.Len())
	return g.loop(ctx)
}

// restate rebuilds the state the turns before left — loaded skills and
// their per-load state, stores, artifacts and handles, the board — by
// running their steps again on a scratch transcript, quietly: responses
// and programs' results from the journal, in-memory tools executed again.
//
// Q1: what the turns before left is there when the next starts.
func (r *Run) restate(ctx context.Context, g *generator, h *hostEnv, past []runrecord.Turn, cur *runrecord.Turn, msgs []model.Message) error {
	if len(past) == 0 {
		return nil
	}
	record := g.tr
	scratch := transcript.New(nil, transcript.WithClock(r.now))
	obs := g.obs
	g.tr, h.tr, g.obs, r.ev.quiet = scratch, scratch, nil, true
	defer func() { g.tr, h.tr, g.obs, r.ev.quiet, g.past = record, record, obs, false, false }()
	for k, t := range past {
		if t.Entry < 0 {
			continue // it died before anything of it was recorded
		}
		end := len(msgs)
		for _, next := range past[k+1:] {
			if next.Entry >= 0 {
				end = next.Message
				break
			}
		}
		if k == len(past)-1 && cur != nil {
			end = cur.Message
		}
		end = min(end, len(msgs))
		dropSkills(h, lastTurn(past[:k]), t.Dropped, scratch)
		i := min(t.Message, end)
		for i < end && msgs[i].Role != model.User {
			i++
		}
		if i >= end {
			continue
		}
		g.turn, g.caller.Turn, g.caller.Input = k+1, k+1, t.Input
		if err := g.add(msgs[i]); err != nil {
			return err
		}
		g.replay, g.past = cursorOver(msgs[i+1:end]), true
		if _, err := g.loop(ctx); err != nil && !errors.Is(err, errTurnOver) {
			return fmt.Errorf("session %s: restating turn %d: %w", r.opts.session.s.Name, k+1, err)
		}
		g.past = false
	}
	if last := past[len(past)-1]; last.Status == runrecord.TurnFinished || last.Status == runrecord.TurnFailed {
		// What the turn left loaded is what its record says, in its
		// order: a skill that is gone now could not be loaded again.
		h.mgr.keepOnly(last.Loaded)
	}
	return nil
}

// cursorOver is a cursor over one turn's messages after its user message.
func cursorOver(msgs []model.Message) *cursor {
	return newCursor(&genReplay{msgs: msgs}, 0)
}

// lastTurn is the last turn that has a place in the transcript, or nil.
func lastTurn(past []runrecord.Turn) *runrecord.Turn {
	for i := len(past) - 1; i >= 0; i-- {
		if past[i].Entry >= 0 {
			return &past[i]
		}
	}
	return nil
}

// changedSince lists the skills the turn before left loaded whose
// revision in the catalog is not the one it had, or that are gone.
//
// Q5: a skill edited, disabled or removed between turns is unloaded as a
// live reload unloads it.
func changedSince(prev *runrecord.Turn, m *manager) []string {
	if prev == nil {
		return nil
	}
	was := map[string]string{}
	var ids []string
	for _, l := range prev.Loaded {
		was[l.ID] = l.Revision
		ids = append(ids, l.ID)
	}
	if len(prev.Loaded) == 0 && prev.Status == runrecord.TurnAbandoned {
		// An abandoned turn left no list: the skills loaded now, at the
		// revisions the catalog had when it started.
		for _, l := range m.loaded {
			ids = append(ids, l.skill.ID)
			was[l.skill.ID] = prev.Skills[l.skill.ID]
		}
	}
	var out []string
	for _, id := range ids {
		cur, ok := m.lookup(id)
		if !ok || was[id] != "" && cur.Revision() != was[id] {
			out = append(out, id)
		}
	}
	return out
}

// dropSkills unloads skills that changed or left since prev, the turn
// before, with the context line a live reload writes, naming each as prev
// had it.
func dropSkills(h *hostEnv, prev *runrecord.Turn, ids []string, tr *transcript.Transcript) {
	m := h.mgr
	for _, id := range ids {
		was := skillAt(prev, id)
		if _, l := m.find(id); l != nil {
			m.loaded = slices.DeleteFunc(m.loaded, func(x *loadedSkill) bool { return x == l })
			if len(l.skill.MCP) > 0 {
				m.box.mcp.Release(l.skill)
			}
		}
		reason, line := reasonDisabled, disabledLine(was)
		if cur, ok := m.lookup(id); ok {
			reason, line = reasonVersionChanged, versionLine(was, cur.Revision())
		}
		m.emitSkill(false, was, reason)
		_ = tr.AppendContext(transcript.ContextChange{Unloaded: []string{id}, Skill: id, Version: was.Version, Reason: reason, Line: line})
	}
}

// skillAt is skill id as the turn prev had it: its id and revision.
func skillAt(prev *runrecord.Turn, id string) *spec.Skill {
	rev := ""
	if prev != nil {
		rev = prev.Skills[id]
		for _, l := range prev.Loaded {
			if l.ID == id {
				rev = l.Revision
			}
		}
	}
	if d, ok := strings.CutPrefix(rev, "sha256:"); ok {
		return &spec.Skill{ID: id, Digest: d}
	}
	return &spec.Skill{ID: id, Version: rev}
}

// keepOnly makes the loaded skills those of list, in its order (least
// recently read first), of those loaded now.
func (m *manager) keepOnly(list []runrecord.SkillAt) {
	var kept []*loadedSkill
	for _, s := range list {
		if _, l := m.find(s.ID); l != nil {
			kept = append(kept, l)
		}
	}
	for _, l := range m.loaded {
		if !slices.Contains(kept, l) && len(l.skill.MCP) > 0 {
			m.box.mcp.Release(l.skill)
		}
	}
	m.loaded = kept
}

// endTurn records in session.json how the turn ended and what it left
// loaded; a turn interrupted or stopped for an approval stays open.
func (r *Run) endTurn(status runrecord.Status) error {
	st := r.opts.session
	if st == nil || !st.started {
		return nil
	}
	var ts runrecord.TurnStatus
	switch status {
	case runrecord.Finished:
		ts = runrecord.TurnFinished
	case runrecord.Failed:
		ts = runrecord.TurnFailed
	default:
		return nil
	}
	st.s.mu.Lock()
	defer st.s.mu.Unlock()
	n := len(st.s.file.Turns)
	if n == 0 {
		return nil
	}
	t := &st.s.file.Turns[n-1]
	t.Status, t.Finished, t.Loaded = ts, r.now(), nil
	if st.host != nil {
		for _, l := range st.host.mgr.loaded {
			t.Loaded = append(t.Loaded, runrecord.SkillAt{ID: l.skill.ID, Version: l.skill.Version, Revision: l.skill.Revision()})
		}
	}
	st.s.resume = false
	return runrecord.WriteSession(st.s.dir, st.s.file)
}
