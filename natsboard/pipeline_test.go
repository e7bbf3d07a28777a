package natsboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/work"
)

// TestEventsFlushedBeforeDone: the events a worker sent before its
// outcome all reach the attempt's sink before the Dispatch waiting for
// it returns, although the run's one events subscription emits them on
// its own goroutine. The sink is held until the outcome has come, so
// every event is still queued when done is called.
func TestEventsFlushedBeforeDone(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
		_, err := c.publish(ctx, &nats.Msg{Subject: "fsd-test-nostream.x", Data: []byte("x")}, fmt.Sprint("key-", 1))
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

// TestFetchesAsManyAsFreeSlots: a worker's pulls ask for as many tasks as
// it has free slots, together, and no more: with 8 tasks queued and 3
// slots, 3 are delivered and running and 5 stay on the queue for other
// workers (a task fetched without a slot would wait on this worker while
// its ack wait ran).
func TestFetchesAsManyAsFreeSlots(t *testing.T) {
	t.Parallel()
	srv := runServer(t)
	c, err := Connect(context.Background(), srv.ClientURL(), Options{})
	must(t, err)
	defer c.Close()
	started, release := make(chan string, 8), make(chan struct{})
	serve(t, srv.ClientURL(), WorkerOptions{Name: "w1", Concurrency: 3, AckWait: 5 * time.Second,
		Model: func(string, string) (model.Model, error) { return nil, nil },
		Work: func(ctx context.Context, a *work.Attempt, o work.Options) *work.Outcome {
			started <- a.Task
			select {
			case <-release:
			case <-ctx.Done():
			}
			return &work.Outcome{Result: "done " + a.Task}
		}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			out, err := c.Dispatch(ctx, &work.Attempt{Run: "run1", Task: fmt.Sprintf("t%d", i), Number: 1, Goal: "wait"}, nil, nil)
			if err == nil && out.Error != "" {
				err = errors.New(out.Error)
			}
			errs <- err
		}()
	}
	for range 3 {
		select {
		case <-started:
		case <-ctx.Done():
			t.Fatal("3 tasks did not start")
		}
	}
	cons, err := c.res.tasks.Consumer(ctx, consumerName(">"))
	must(t, err)
	until(t, "the 8 tasks on the queue", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumAckPending+int(info.NumPending) == 8
	})
	info, err := cons.Info(ctx)
	must(t, err)
	if info.NumAckPending != 3 || info.NumPending != 5 {
		t.Errorf("%d tasks delivered and %d queued; want 3 (the worker's slots) and 5", info.NumAckPending, info.NumPending)
	}
	close(release)
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
