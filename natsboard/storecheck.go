package natsboard

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// storeStreams are the streams whose loss loses a run in progress: its
// queued tasks and its committed outcomes.
var storeStreams = []string{TaskStream, "KV_" + ResultsBucket}

// created is when each of storeStreams was created, as the server says.
func created(ctx context.Context, js jetstream.JetStream) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	for _, name := range storeStreams {
		s, err := js.Stream(ctx, name)
		if err != nil {
			return nil, err
		}
		out[name] = s.CachedInfo().Created
	}
	return out, nil
}

// watchStore makes the coordinator look at fsd's streams each time its
// connection comes back. A server restarted without its store has lost
// them, and a worker creates them again within a moment: the results
// watch then quietly follows the new, empty bucket, and the run would
// wait forever for tasks that are no longer queued. A stream gone, or
// created at another time than when the coordinator connected, ends
// every wait of the run with the store-lost error instead.
//
// N15: a store lost is noticed at a reconnect, not waited on.
func (c *Coordinator) watchStore(ctx context.Context) {
	born, err := created(ctx, c.res.js)
	if err != nil {
		c.opts.Logger.Debug().Err(err).Msg("cannot tell when fsd's streams were created; a server restarted without its store will not be noticed")
		return
	}
	c.res.nc.SetReconnectHandler(func(*nats.Conn) {
		if !c.checking.CompareAndSwap(false, true) {
			return
		}
		go func() {
			defer c.checking.Store(false)
			if c.storeLost(born) {
				c.lose()
			}
		}()
	})
}

// storeLost asks the server, after a reconnect, whether the streams are
// still those the coordinator started with. A stream not found is looked
// for once more a second later (a cluster electing leaders may not know
// it for a moment); other errors are tried again for a minute, then the
// streams count as kept.
func (c *Coordinator) storeLost(born map[string]time.Time) bool {
	missing := 0
	for range 60 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		now, err := created(ctx, c.res.js)
		cancel()
		switch {
		case err == nil:
			for name, t := range born {
				if !now[name].Equal(t) {
					return true
				}
			}
			return false
		case errors.Is(err, jetstream.ErrStreamNotFound):
			if missing++; missing == 2 {
				return true
			}
		default:
			missing = 0
		}
		select {
		case <-c.closed:
			return false
		case <-time.After(time.Second):
		}
	}
	return false
}

// lose ends the wait of every run this coordinator watches, and of any it
// would watch from now on, with the store-lost error.
func (c *Coordinator) lose() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lost = true
	for _, w := range c.watches {
		w.stop()
	}
}
