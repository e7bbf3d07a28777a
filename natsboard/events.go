package natsboard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/fsdrun/fsd/event"
)

// eventsBuffer is how many worker events one run's subscription holds
// before the coordinator has emitted them: past it, events are dropped
// (they are best effort), as a NATS subscription's pending limit drops.
const eventsBuffer = 1 << 16

// runEvents brings the events workers send for one run's attempts to the
// sink of the Dispatch waiting for each: one subscription per run
// (fsd.events.RUN.>) rather than one per attempt, whose subscribe,
// unsubscribe and drain cost the server and the coordinator more than
// the events themselves for a short task.
type runEvents struct {
	sub  *nats.Subscription
	ch   chan *nats.Msg
	quit chan struct{}
	// emitted counts the messages of sub that emit has handed on (or
	// dropped): once it reaches what sub delivered to ch, nothing waits.
	emitted atomic.Uint64

	mu    sync.Mutex
	sinks map[string]attemptSink // by events subject
	// barriers are the markers flush put in ch, each with the channel
	// closed when every message before it was emitted.
	barriers map[*nats.Msg]chan struct{}
}

type attemptSink struct {
	run, task string
	sink      event.Sink
}

// followEvents subscribes to the events of run's attempts.
func followEvents(nc *nats.Conn, run string) (*runEvents, error) {
	e := &runEvents{ch: make(chan *nats.Msg, eventsBuffer), quit: make(chan struct{}),
		sinks: map[string]attemptSink{}, barriers: map[*nats.Msg]chan struct{}{}}
	subject := eventSubject + "." + token(run) + ".>"
	sub, err := nc.ChanSubscribe(subject, e.ch)
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", subject, err)
	}
	e.sub = sub
	go e.emit()
	return e, nil
}

// emit hands each event to its attempt's sink, in the order they came.
func (e *runEvents) emit() {
	for {
		var msg *nats.Msg
		select {
		case msg = <-e.ch:
		case <-e.quit:
			return
		}
		e.mu.Lock()
		if done, ok := e.barriers[msg]; ok {
			delete(e.barriers, msg)
			e.mu.Unlock()
			close(done)
			continue
		}
		s, ok := e.sinks[msg.Subject]
		e.mu.Unlock()
		if ok {
			emitEvents(s, splitEvents(msg.Data))
		} // else an attempt no Dispatch waits for (any more)
		e.emitted.Add(1)
	}
}

// emitEvents hands an attempt's events to its sink, in order; one that
// cannot be read is dropped. Events are decoded as their appender wrote
// them, without reflection (U20).
func emitEvents(s attemptSink, events []json.RawMessage) {
	for _, data := range events {
		var ev event.Event
		if event.Unmarshal(data, &ev) == nil {
			ev.Run, ev.Task = s.run, s.task // a worker reports on its task only
			s.sink.Emit(ev)
		}
	}
}

// add sends the events on subject to sink until done is called. done
// returns once every event that reached this coordinator before it was
// called has been emitted: the outcome a Dispatch waits for comes after
// the worker's events on the same connection, so its events reach the
// sink before the board reports the task's end. (On a cluster, an event
// still between nodes then may come later: it is dropped, as events are
// best effort.)
func (e *runEvents) add(subject, run, task string, sink event.Sink) (done func()) {
	e.mu.Lock()
	e.sinks[subject] = attemptSink{run: run, task: task, sink: sink}
	e.mu.Unlock()
	return func() {
		e.flush()
		e.mu.Lock()
		delete(e.sinks, subject)
		e.mu.Unlock()
	}
}

// flush waits until the events received so far have been emitted (or the
// run's events stopped).
//
// U1: the marker goes behind every event that came before the outcome.
// U30: none when emit has handed on every message the subscription put
// in ch, as for a task whose events all ride in its outcome.
func (e *runEvents) flush() {
	// The client counts a message as delivered once it is in ch, and emit
	// takes them in that order: every one counted before now is emitted
	// when emitted has reached the count.
	if n, err := e.sub.Delivered(); err == nil && e.emitted.Load() >= uint64(n) {
		return
	}
	marker, done := &nats.Msg{}, make(chan struct{})
	e.mu.Lock()
	e.barriers[marker] = done
	e.mu.Unlock()
	select {
	case e.ch <- marker:
	case <-e.quit:
		return
	}
	select {
	case <-done:
	case <-e.quit:
	}
}

// stop ends the subscription.
func (e *runEvents) stop() {
	select {
	case <-e.quit:
	default:
		close(e.quit)
		_ = e.sub.Unsubscribe()
	}
}

// eventsLinger is the longest a worker keeps an attempt's event before
// it sends it: events go out in batches, one message each, as a local
// run writes its events at most 20 ms late.
const eventsLinger = 20 * time.Millisecond

// eventBatch is a worker's sink for one attempt's events: it sends them
// in batches, one event per line of a message on the attempt's events
// subject, at most eventsLinger after the first of a batch. The batch
// still kept when the attempt ends rides in its outcome instead (tail):
// a task shorter than the linger sends no event message at all.
type eventBatch struct {
	nc      *nats.Conn
	subject string
	max     int // bytes a message may hold
	linger  time.Duration

	mu      sync.Mutex
	kept    []byte // events, one per line
	scratch []byte // the event being kept
	timer   *time.Timer
	closed  bool // tail was called: events go out one by one
}

func newEventBatch(nc *nats.Conn, subject string) *eventBatch {
	b := &eventBatch{}
	b.init(nc, subject)
	return b
}

// init is newEventBatch for a batch kept elsewhere (a taskRun's).
func (b *eventBatch) init(nc *nats.Conn, subject string) {
	b.nc, b.subject, b.max, b.linger = nc, subject, int(nc.MaxPayload())-1024, eventsLinger
}

// Emit keeps an event for the next batch.
//
// The event is encoded by its own appender (json.Marshal's bytes, F1)
// into a buffer the batch reuses: what it writes is copied into the batch
// or the published message.
func (b *eventBatch) Emit(e event.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	data, err := e.AppendJSON(b.scratch[:0])
	if err != nil {
		return
	}
	b.scratch = data
	if b.closed {
		_ = b.nc.Publish(b.subject, data)
		return
	}
	if len(b.kept)+len(data)+1 > b.max {
		b.send()
	}
	if len(b.kept) > 0 {
		b.kept = append(b.kept, '\n')
	}
	b.kept = append(b.kept, data...)
	switch {
	case b.timer == nil:
		b.timer = time.AfterFunc(b.linger, b.flush)
	case len(b.kept) == len(data):
		b.timer.Reset(b.linger)
	}
}

func (b *eventBatch) flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.send()
	}
}

// send publishes the kept events as one message (b.mu held). Events are
// best effort: a failed publish loses them.
func (b *eventBatch) send() {
	if len(b.kept) == 0 {
		return
	}
	_ = b.nc.Publish(b.subject, b.kept)
	b.kept = nil
	if b.timer != nil {
		b.timer.Stop()
	}
}

// tail ends the batching and returns the events kept, for the outcome:
// those of the last moments, that no message carried yet. Events emitted
// later are sent one by one.
//
// U9: the last batch rides in the outcome.
func (b *eventBatch) tail() []json.RawMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.timer != nil {
		b.timer.Stop()
	}
	return splitEvents(b.kept)
}

// untail sends events tail returned that did not fit the outcome, as a
// batch of their own: the outcome follows them on the same connection.
func (b *eventBatch) untail(events []json.RawMessage) {
	var data []byte
	for i, e := range events {
		if i > 0 {
			data = append(data, '\n')
		}
		data = append(data, e...)
	}
	if len(data) > 0 {
		_ = b.nc.Publish(b.subject, data)
	}
}

// splitEvents splits a batch into its events, one per line.
func splitEvents(data []byte) []json.RawMessage {
	if len(data) == 0 {
		return nil
	}
	// Sized once: grown line by line it cost a worker's tail two
	// allocations a task.
	out := make([]json.RawMessage, 0, bytes.Count(data, []byte("\n"))+1)
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		if len(line) > 0 {
			out = append(out, json.RawMessage(line))
		}
	}
	if len(out) == 0 {
		return nil // as before: no event, no slice
	}
	return out
}
