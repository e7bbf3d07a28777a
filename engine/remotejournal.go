package engine

// Remote transcripts in the run record: a task attempt that
// ran on a worker journals its transcript where the worker runs (package
// natsboard: a JetStream stream); when its outcome arrives the
// coordinator copies the entries into its own journal.jsonl under the
// attempt's generator, so fsd show, fsd ui and fsd report read a remote
// task's transcript as they read a local one, and a resumed coordinator
// knows which outcomes its predecessor had already recorded.

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/transcript"
	"github.com/fsdrun/fsd/work"
)

// journalCopyTimeout bounds reading a remote attempt's journal; the
// outcome counts without it.
const journalCopyTimeout = 30 * time.Second

// recordRemote copies a remote attempt's transcript into the run record,
// after the entries the record already holds (a resumed run's
// predecessor may have copied some or all). When the record held them
// all before, the attempt's end is the journal's: its task.completed or
// task.failed says replayed, as a local worker's does.
//
// N12: a remote attempt's transcript enters the record once.
func (hb *hostBoard) recordRemote(ctx context.Context, rt *work.Attempt, res *work.Outcome) {
	n := res.Logged
	if n == 0 {
		return // nothing journaled (a failure before the generator ran)
	}
	have := 0
	j := hb.resume.gen(transcriptName(rt.Task, rt.Number))
	if j != nil {
		have = j.entries
	}
	if have >= n {
		hb.restated(rt.Task)
		return
	}
	rec := hb.workers.gen.rec
	if rec == nil {
		return
	}
	log := hb.log.With().Str("task", rt.Task).Int("attempt", rt.Number).Logger()
	entries := res.Log
	if len(entries) < n {
		jr, ok := hb.dispatch.(work.LogReader)
		if !ok {
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), journalCopyTimeout)
		defer cancel()
		var err error
		if entries, err = jr.AttemptLog(ctx, rt.Run, rt.Task, rt.Number); err != nil {
			log.Warn().Err(err).Msg("the worker's transcript could not be read; the run record lacks it")
			return
		}
	}
	if len(entries) < n {
		log.Warn().Int("entries", len(entries)).Int("outcome", n).Msg("the worker's transcript is shorter than its outcome says; the record holds what was read")
	}
	if have > 0 && !sameTranscript(j, entries[:min(have, len(entries))]) {
		// The attempt ran in this process before the run was resumed with
		// a dispatcher: the worker started it over, and its tail would not
		// follow what the record holds.
		log.Warn().Msg("the record holds another transcript of this attempt (it ran here before); the worker's is not added")
		return
	}
	gen := journal.Gen{Task: rt.Task, Attempt: rt.Number}
	for _, e := range entries[min(have, len(entries)):] {
		// A failed append fails the record, and with it the run.
		if _, err := rec.Journal().Append(gen, e); err != nil {
			return
		}
	}
}

// sameTranscript reports whether entries hold the messages of the
// journal j: the record's part of the attempt is the worker's prefix.
func sameTranscript(j *genReplay, entries []json.RawMessage) bool {
	es := make([]transcript.Entry, len(entries))
	for i, e := range entries {
		if json.Unmarshal(e, &es[i]) != nil {
			return false
		}
	}
	msgs, err := transcript.Rebuild(es)
	if err != nil || len(msgs) != len(j.msgs) {
		return false
	}
	a, err1 := json.Marshal(msgs)
	b, err2 := json.Marshal(j.msgs)
	return err1 == nil && err2 == nil && bytes.Equal(a, b)
}
