package natsboard

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/event"
)

// TestEventsFlushedBeforeDone: the events a worker sent before its
// outcome all reach the attempt's sink before the Dispatch waiting for
// it returns, although the run's one events subscription emits them on
// its own goroutine. The sink is held until the outcome has come, so
// every event is still queued when done is called.
func TestEventsFlushedBeforeDone(t *testing.T) {
	srv := runServer(t)
	coord, err := nats.Connect(srv.ClientURL())
	must(t, err)
	defer coord.Close()
	worker, err := nats.Connect(srv.ClientURL())
	must(t, err)
	defer worker.Close()

	e, err := followEvents(coord, "run1")
	must(t, err)
	defer e.stop()
	release := make(chan struct{})
	var emitted atomic.Int64
	sink := event.SinkFunc(func(event.Event) {
		<-release
		emitted.Add(1)
	})
	subject := eventsSubject("run1", "t1", 1)
	done := e.add(subject, "run1", "t1", sink)
	outcome := make(chan struct{})
	sub, err := coord.Subscribe("outcome", func(*nats.Msg) { close(outcome) })
	must(t, err)
	defer func() { _ = sub.Unsubscribe() }()
	must(t, coord.Flush())

	const n = 500
	for i := range n {
		data, _ := json.Marshal(event.Event{Type: "message", Text: fmt.Sprint(i)})
		must(t, worker.Publish(subject, data))
	}
	must(t, worker.Publish("outcome", nil)) // after the events, on the same connection
	must(t, worker.Flush())
	select {
	case <-outcome:
	case <-time.After(time.Minute):
		t.Fatal("the outcome never came")
	}
	close(release)
	done()
	if got := emitted.Load(); got != n {
		t.Errorf("%d of %d events emitted when done returned", got, n)
	}
}

// TestTaskPublishOutlastsNoStream: a task message published while no
// stream takes its subject (a stream's leader being elected) is published
// again until one does, through the asynchronous publish as through a
// request.
func TestTaskPublishOutlastsNoStream(t *testing.T) {
	srv := runServer(t)
	c, err := Connect(context.Background(), srv.ClientURL(), Options{})
	must(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	made := make(chan error, 1)
	calls := 0
	err = keepTrying(ctx, zerolog.Nop(), "publish the task to NATS", func() error {
		calls++
		err := c.publish(ctx, &nats.Msg{Subject: "fsd-test-nostream.x", Data: []byte("x")}, fmt.Sprint("key-", 1))
		if err != nil && calls == 1 {
			go func() {
				_, err := c.res.js.CreateStream(ctx, jetstream.StreamConfig{Name: "NOSTREAM", Subjects: []string{"fsd-test-nostream.>"}})
				made <- err
			}()
		}
		return err
	})
	if err != nil {
		t.Fatalf("publish with no stream for a moment: %v after %d calls; want it through once the stream is there", err, calls)
	}
	if calls < 2 {
		t.Fatalf("%d calls: the first had a stream to answer it, the test proves nothing", calls)
	}
	must(t, <-made)
}
