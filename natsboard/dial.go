package natsboard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// Credentials prove a client's identity to NATS without putting a secret
// in the URL, where `ps` shows it to every user of the machine. Both are
// file paths: the secret stays in the file, which the client reads when
// it (re)connects.
type Credentials struct {
	// Creds is a NATS .creds file: a user JWT and its nkey seed
	// (decentralised auth, `nsc generate creds`).
	Creds string
	// NKey is a file holding an nkey user seed (SU…), for a server whose
	// authorization lists the matching public key.
	NKey string
}

// options are the client options the credentials give.
func (c Credentials) options() ([]nats.Option, error) {
	var out []nats.Option
	if c.Creds != "" {
		if _, err := os.Stat(c.Creds); err != nil {
			return nil, fmt.Errorf("NATS credentials: %w", err)
		}
		out = append(out, nats.UserCredentials(c.Creds))
	}
	if c.NKey != "" {
		o, err := nats.NkeyOptionFromSeed(c.NKey)
		if err != nil {
			return nil, fmt.Errorf("NATS nkey seed %s: %w", c.NKey, err)
		}
		out = append(out, o)
	}
	return out, nil
}

// dialing is how connect dials.
type dialing struct {
	name     string
	replicas int
	log      zerolog.Logger
	creds    Credentials
	// wait: a server not there yet is waited for (until ctx ends) rather
	// than an error; the setup that follows is bounded by setupWait.
	wait bool
}

// setupWait bounds a waiting client's JetStream setup once it has
// connected, as the caller's context bounds a client that does not wait.
const setupWait = 30 * time.Second

// firstRetry and lastRetry bound the backoff between attempts of a client
// waiting for its first connection.
const (
	firstRetry = 500 * time.Millisecond
	lastRetry  = 5 * time.Second
)

// dial connects to url. A client that waits (d.wait) uses the NATS
// client's own retry of a failed first connection, with a backoff up to
// lastRetry, and says before each pause that it is waiting; a server that
// answers but refuses it (credentials, not NATS, TLS) is an error at
// once, as is any failure of a client that does not wait. url is the
// redacted URL, for messages.
//
// N24: a worker started before its server waits for it.
func dial(ctx context.Context, url, shown string, d dialing) (*nats.Conn, error) {
	creds, err := d.creds.options()
	if err != nil {
		return nil, err
	}
	opts := append([]nats.Option{nats.Name(d.name), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond),
		nats.ErrorHandler(asyncErrors(d.log))}, creds...)
	if !d.wait {
		return nats.Connect(url, opts...)
	}
	var connected atomic.Bool
	var lastErr atomic.Pointer[error]
	up := make(chan struct{}, 1)
	refused := make(chan error, 1)
	opts = append(opts, nats.RetryOnFailedConnect(true),
		nats.ConnectHandler(func(*nats.Conn) {
			connected.Store(true)
			select {
			case up <- struct{}{}:
			default:
			}
		}),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) {
			if connected.Load() || err == nil {
				return
			}
			if !unreachable(err) {
				select {
				case refused <- err:
				default:
				}
				return
			}
			lastErr.Store(&err)
		}),
		// Backoff before the first connection only: once connected, a lost
		// connection is tried again every ReconnectWait, as without wait.
		nats.CustomReconnectDelay(func(attempts int) time.Duration {
			if connected.Load() {
				return 250 * time.Millisecond
			}
			pause := min(firstRetry<<min(attempts-1, 8), lastRetry)
			// Said once the failure is known to be worth waiting for (the
			// handler above runs asynchronously): a server that refuses
			// the client is an error, not a wait.
			last := lastErr.Load()
			if last == nil {
				return pause
			}
			why := "nothing answers there"
			if !errors.Is(*last, nats.ErrNoServers) {
				why = (*last).Error()
			}
			d.log.Warn().Str("nats", shown).Msgf("waiting for NATS at %s (%s); trying again in %s", shown, why, pause)
			return pause
		}))
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, err
	}
	for !nc.IsConnected() {
		select {
		case <-up:
		case err := <-refused:
			nc.Close()
			return nil, err
		case <-ctx.Done():
			nc.Close()
			return nil, fmt.Errorf("%w (still waiting for the NATS server)", ctx.Err())
		case <-time.After(time.Second):
			// IsConnected is looked at again: the handler runs
			// asynchronously and may come after a status change.
		}
		if nc.IsClosed() {
			if err := nc.LastError(); err != nil {
				return nil, err
			}
			return nil, nats.ErrConnectionClosed
		}
	}
	return nc, nil
}

// unreachable tells a server that is not there (yet) from one that
// answered and refused: only the first is worth waiting for.
func unreachable(err error) bool {
	var op *net.OpError
	return errors.Is(err, nats.ErrNoServers) || errors.As(err, &op) && op.Op == "dial"
}
