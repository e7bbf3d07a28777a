package natsboard

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// puller fetches tasks for a worker's free slots: one pull request for
// all the slots waiting at the moment, rather than one per slot. A pull
// costs the server and the client a subscription, a request and its
// expiry; for short tasks on a full queue that was as much as the task's
// own messages. A round asks for exactly as many messages as slots wait
// for it, so a worker never holds a task it has no slot for (whose ack
// wait would run while it waits, and which another worker could run).
type puller struct {
	w    *Worker
	want chan chan delivery // a slot waiting, and where its delivery goes
}

// delivery is what a round gives one waiting slot: a task message, or
// err (nats.ErrTimeout: none came before the pull expired).
type delivery struct {
	msg jetstream.Msg
	// asked is when the pull was sent: the delivery's lease starts then.
	asked time.Time
	// reconnects is the connection's reconnect count when the pull was
	// sent: a delivery that came across a reconnect may have missed a
	// cancel (handle).
	reconnects uint64
	err        error
}

func newPuller(w *Worker) *puller { return &puller{w: w, want: make(chan chan delivery)} }

// next waits for a task message for a slot the caller holds. ok is false
// when ctx ended before the slot was counted in a round.
func (p *puller) next(ctx context.Context, r chan delivery) (d delivery, ok bool) {
	select {
	case p.want <- r:
	case <-ctx.Done():
		return delivery{}, false
	}
	// Counted in a round: it answers, even when ctx ends meanwhile.
	return <-r, true
}

// run makes rounds until ctx ends: it takes the first waiting slot, then
// every other one waiting already, and pulls for them all.
func (p *puller) run(ctx context.Context) {
	for {
		var waiting []chan delivery
		select {
		case r := <-p.want:
			waiting = append(waiting, r)
		case <-ctx.Done():
			return
		}
	more:
		for {
			select {
			case r := <-p.want:
				waiting = append(waiting, r)
			default:
				break more
			}
		}
		p.round(ctx, waiting)
	}
}

// round pulls up to len(waiting) messages, waiting at most half the ack
// wait (a delivery's lease starts when it was asked for, and keeps the
// rest), and answers every waiting slot: with a message as it comes, or,
// when the pull ends with fewer, with why.
//
// U6: never more than the slots waiting, and every one answered.
func (p *puller) round(ctx context.Context, waiting []chan delivery) {
	asked, reconnects := time.Now(), p.w.res.nc.Stats().Reconnects
	answered := 0
	reason := error(nats.ErrTimeout)
	defer func() {
		for _, r := range waiting[answered:] {
			r <- delivery{asked: asked, err: reason}
		}
	}()
	if ctx.Err() != nil {
		return
	}
	batch, err := p.w.queue().Fetch(len(waiting), jetstream.FetchMaxWait(min(pullRenew, p.w.opts.AckWait/2)))
	if err != nil {
		reason = err
		return
	}
	for msg := range batch.Messages() {
		waiting[answered] <- delivery{msg: msg, asked: asked, reconnects: reconnects}
		answered++
	}
	if err := batch.Error(); err != nil {
		reason = err
	}
}
