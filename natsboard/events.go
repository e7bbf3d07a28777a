package natsboard

import (
	"encoding/json"
	"fmt"
	"sync"

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
		if !ok {
			continue // an attempt no Dispatch waits for (any more)
		}
		var ev event.Event
		if json.Unmarshal(msg.Data, &ev) == nil {
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
func (e *runEvents) flush() {
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
