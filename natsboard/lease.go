package natsboard

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// lease is what a worker knows of its hold on one delivery of a task
// message. The server delivers the message again one ack wait after the
// last heartbeat (in-progress ack) it processed, to any worker. A
// heartbeat the server answered while the lease held extends it, from
// when the heartbeat was sent (the server processed it later, so its own
// deadline is later still); a lease that ran out stays lost, even when
// the network comes back: the message may be another worker's delivery
// by then.
//
// It matters for a Nak: JetStream applies an ack to the message, not to
// the delivery it names, so a Nak from a worker that lost its lease (cut
// off past the ack wait, then back) would send a task another worker is
// running to a third delivery, and spend one of its bounded deliveries.
type lease struct {
	ackWait time.Duration
	asked   time.Time // when the delivery was asked for
	mu      sync.Mutex
	until   time.Time
	lost    bool
}

// start starts a lease on a delivery asked for at asked: the server
// delivered it, and started its ack wait, after that. The lease is a
// delivery's taskRun's, not an allocation of its own.
func (l *lease) start(asked time.Time, ackWait time.Duration) {
	l.ackWait, l.asked, l.until = ackWait, asked, asked.Add(ackWait)
}

// held reports whether the delivery is still this worker's, with a
// margin for a Nak sent now to reach the server in time.
//
// N7: with a margin for the Nak to arrive in time.
func (l *lease) held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.lost && !time.Now().Add(l.ackWait/10).Before(l.until) {
		l.lost = true
	}
	return !l.lost
}

// confirmed records that the server answered a heartbeat sent at sent.
func (l *lease) confirmed(sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost || !time.Now().Before(l.until) {
		// Answered too late: the server may have delivered the message
		// again before it processed this heartbeat.
		l.lost = true
		return
	}
	l.until = sent.Add(l.ackWait)
}

// handBack gives a delivery back to the queue, to be delivered again
// after delay, while this worker holds it, and reports whether it did.
// After its lease ran out it tells the server nothing: the server has
// delivered the message again or will, one ack wait after the last
// heartbeat.
//
// N7: only the lease holder hands a delivery back.
func handBack(msg jetstream.Msg, l *lease, delay time.Duration, log zerolog.Logger) bool {
	if !l.held() {
		log.Info().Msg("task not handed back: no heartbeat reached NATS for an ack wait, so it goes, or went, to another worker anyway")
		return false
	}
	if delay > 0 {
		_ = msg.NakWithDelay(delay)
	} else {
		_ = msg.Nak()
	}
	return true
}
