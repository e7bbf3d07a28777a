package natsboard

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// puller fetches tasks for a worker's free slots: one pull request for
// all the slots waiting at the moment, rather than one per slot. A pull
// costs the server and the client a request and its expiry; for short
// tasks on a full queue that was as much as the task's own messages. A
// round asks for exactly as many messages as slots wait for it, so a
// worker never holds a task it has no slot for (whose ack wait would run
// while it waits, and which another worker could run). Every pull's
// messages come on one subscription, made once (again only after a pull
// that did not end as the server ends one), each pull's status to its
// own subject under it: a subscription per pull (the client library's
// Fetch) costs the server a subscribe and an unsubscribe, and the client
// a subscription and a goroutine, per task.
type puller struct {
	w    *Worker
	want chan chan delivery // a slot waiting, and where its delivery goes
	// sub receives every pull's messages, those of the nth on inbox.n.
	sub   *nats.Subscription
	inbox string
	pulls uint64
	// subject is where pulls go; waiting and req are the slots of a round
	// and its request, reused by the next.
	subject string
	waiting []chan delivery
	req     []byte
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

func newPuller(w *Worker) (*puller, error) {
	inbox := w.res.nc.NewInbox()
	sub, err := w.res.nc.SubscribeSync(inbox + ".*")
	if err != nil {
		return nil, err
	}
	return &puller{w: w, want: make(chan chan delivery), sub: sub, inbox: inbox, subject: pullSubject(w.opts.Agents)}, nil
}

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
	defer func() { _ = p.sub.Unsubscribe() }()
	for {
		waiting := p.waiting[:0]
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
		clear(waiting) // a slot's channel is not kept past its round
		p.waiting = waiting
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
			r <- delivery{asked: asked, reconnects: reconnects, err: reason}
		}
	}()
	if ctx.Err() != nil {
		return
	}
	expires := min(pullRenew, p.w.opts.AckWait/2)
	p.pulls++
	reply := p.inbox + "." + strconv.FormatUint(p.pulls, 10)
	// The publish copies req to the connection's buffer: the next round
	// may write over it.
	p.req = strconv.AppendInt(append(p.req[:0], `{"batch":`...), int64(len(waiting)), 10)
	p.req = append(strconv.AppendInt(append(p.req, `,"expires":`...), expires.Nanoseconds(), 10), '}')
	if err := p.w.res.nc.PublishRequest(p.subject, reply, p.req); err != nil {
		reason = err
		return
	}
	// The server ends the pull at its expiry with a status message; the
	// client's own bound is for one lost with the connection.
	deadline := asked.Add(expires + time.Second)
	for answered < len(waiting) {
		msg, err := p.sub.NextMsg(time.Until(deadline))
		if err != nil {
			if !errors.Is(err, nats.ErrTimeout) {
				reason = err
			}
			// The pull may still deliver: later pulls go to a new inbox,
			// so what it sends reaches nobody (and comes again after the
			// ack wait).
			p.renew()
			return
		}
		if strings.HasPrefix(msg.Reply, "$JS.ACK.") {
			// A task: every earlier pull ended with its batch or its
			// status, so it is this pull's.
			waiting[answered] <- delivery{msg: queueMsg{msg}, asked: asked, reconnects: reconnects}
			answered++
			continue
		}
		if msg.Subject != reply {
			continue
		}
		// The pull's end: a status, and no task.
		switch status := msg.Header.Get("Status"); status {
		case "100": // an idle heartbeat
			continue
		case "404", "408": // no messages, or the pull expired
		case "503":
			reason = nats.ErrNoResponders
		default:
			reason = fmt.Errorf("pull from the task queue: %s %s", status, msg.Header.Get("Description"))
		}
		return
	}
}

// renew moves the puller to a new inbox, after a pull that did not end
// as the server ends one.
func (p *puller) renew() {
	inbox := p.w.res.nc.NewInbox()
	sub, err := p.w.res.nc.SubscribeSync(inbox + ".*")
	if err != nil {
		return // the next pull's own failure says why
	}
	_ = p.sub.Unsubscribe()
	p.sub, p.inbox = sub, inbox
}

// pullSubject is where a worker asks for the next messages of its queue.
func pullSubject(agents string) string {
	return "$JS.API.CONSUMER.MSG.NEXT." + TaskStream + "." + consumerName(agents)
}

// queueMsg is a task message a pull delivered, as the client library's
// jetstream.Msg: acks go to its reply subject.
type queueMsg struct{ m *nats.Msg }

func (q queueMsg) Data() []byte         { return q.m.Data }
func (q queueMsg) Headers() nats.Header { return q.m.Header }
func (q queueMsg) Subject() string      { return q.m.Subject }
func (q queueMsg) Reply() string        { return q.m.Reply }
func (q queueMsg) Ack() error           { return q.m.Ack() }
func (q queueMsg) Nak() error           { return q.m.Nak() }
func (q queueMsg) InProgress() error    { return q.m.InProgress() }
func (q queueMsg) Term() error          { return q.m.Term() }
func (q queueMsg) DoubleAck(ctx context.Context) error {
	return q.m.AckSync(nats.Context(ctx))
}
func (q queueMsg) NakWithDelay(d time.Duration) error { return q.m.NakWithDelay(d) }
func (q queueMsg) TermWithReason(reason string) error {
	return q.m.Respond([]byte("+TERM " + reason))
}

func (q queueMsg) Metadata() (*jetstream.MsgMetadata, error) {
	return metadataOf(q, &jetstream.MsgMetadata{})
}

// metadataOf is msg.Metadata(), written to into when msg is a pull's
// delivery (a taskRun keeps it, rather than an allocation of its own).
func metadataOf(msg jetstream.Msg, into *jetstream.MsgMetadata) (*jetstream.MsgMetadata, error) {
	q, ok := msg.(queueMsg)
	if !ok {
		return msg.Metadata()
	}
	md, err := q.m.Metadata()
	if err != nil {
		return nil, err
	}
	*into = jetstream.MsgMetadata{
		Sequence:     jetstream.SequencePair{Consumer: md.Sequence.Consumer, Stream: md.Sequence.Stream},
		NumDelivered: md.NumDelivered, NumPending: md.NumPending, Timestamp: md.Timestamp,
		Stream: md.Stream, Consumer: md.Consumer, Domain: md.Domain,
	}
	return into, nil
}
