package natsboard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// resources are the JetStream resources a coordinator or worker uses.
type resources struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	tasks   jetstream.Stream
	results jetstream.KeyValue
	journal jetstream.Stream
	// jsj publishes journal entries: its async publishes time out, so a
	// lost ack fails a Wait instead of hanging it.
	jsj  jetstream.JetStream
	objs objects
	// warnings are said by the client that connected (replicaWarnings).
	warnings []string
}

// connect dials url (see dial) and makes sure the streams, bucket and
// object store exist (creating the missing ones; existing ones keep their
// settings). d.replicas is the replica count of those it creates (0:
// defaultReplicas). The connection's losses, returns and asynchronous
// errors go to d.log.
func connect(ctx context.Context, url string, d dialing) (*resources, error) {
	// Errors name the URL without its credentials.
	shown := RedactURL(url)
	nc, err := dial(ctx, url, shown, d)
	url, log, replicas := shown, d.log, d.replicas
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, fmt.Errorf("nats %s: %w", url, err)
	case errors.Is(err, nats.ErrNoServers):
		return nil, fmt.Errorf("nats %s: %w (is a NATS server running there? start one with nats-server -js)", url, err)
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		return nil, fmt.Errorf("nats %s: no NATS greeting from the server there (%w): is it a NATS client port (4222 by default)?", url, err)
	case err != nil:
		return nil, fmt.Errorf("nats %s: %w", url, err)
	}
	sayConnection(nc, url, log)
	if d.wait {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, setupWait)
		defer cancel()
	}
	if replicas <= 0 {
		replicas = defaultReplicas(nc)
	}
	r := &resources{nc: nc}
	// A cluster that has just started (or lost a node) answers JetStream
	// requests only once it has leaders: try again until ctx ends. A
	// server that never answers them (no responders) has no JetStream:
	// after a short grace, say so rather than wait out ctx.
	var silent time.Time
	for {
		err = r.setup(ctx, replicas)
		if err == nil {
			r.warnings = r.replicaWarnings(ctx, replicas)
			return r, nil
		}
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) || ctx.Err() != nil {
			break
		}
		if !errors.Is(err, nats.ErrNoResponders) {
			silent = time.Time{}
		} else if silent.IsZero() {
			silent = time.Now()
		} else if time.Since(silent) > 3*time.Second {
			err = jetstream.ErrJetStreamNotEnabled
			break
		}
		t := time.NewTimer(250 * time.Millisecond)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	nc.Close()
	switch {
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled):
		return nil, fmt.Errorf("nats %s: the server does not have JetStream enabled: start it with nats-server -js (or jetstream {} in its config)", url)
	case errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return nil, fmt.Errorf("nats %s: JetStream is not enabled for this user's account (the server's accounts config)", url)
	}
	return nil, fmt.Errorf("nats %s: %w (is JetStream on, with a quorum of the cluster's nodes up? start a server with nats-server -js)", url, err)
}

// sayConnection logs the connection's losses (nothing reaches NATS until
// it is back) and returns, until it is closed. It listens to status
// changes, so the connection's reconnect handler stays free for others
// (Coordinator.watchStore).
func sayConnection(nc *nats.Conn, url string, log zerolog.Logger) {
	ch := nc.StatusChanged(nats.RECONNECTING, nats.CONNECTED, nats.CLOSED)
	go func() {
		lost := false
		for st := range ch {
			switch st {
			case nats.RECONNECTING:
				lost = true
				// A server that shut down cleanly leaves no error to name.
				if err := nc.LastError(); err != nil {
					log.Warn().Str("nats", url).Msgf("lost the connection to NATS (%v); reconnecting", err)
				} else {
					log.Warn().Str("nats", url).Msg("lost the connection to NATS; reconnecting")
				}
			case nats.CONNECTED:
				if lost {
					lost = false
					// Said at the loss's level: fsd run shows warnings only.
					log.Warn().Str("nats", url).Msg("reconnected to NATS")
				}
			case nats.CLOSED:
				return
			}
		}
	}()
}

// asyncErrors logs what the NATS client reports out of band, where its
// default handler would print raw lines on stderr, over the live board. A
// consumer that missed its heartbeats (a partition, a reconnect) is set
// up again by the client itself, and an ordered consumer whose stream is
// gone is said by the coordinator itself (the store was lost): those are
// said only with -v.
func asyncErrors(log zerolog.Logger) nats.ErrHandler {
	return func(_ *nats.Conn, sub *nats.Subscription, err error) {
		e := log.Warn()
		if errors.Is(err, nats.ErrConsumerNotActive) || strings.Contains(err.Error(), "recreating ordered consumer") {
			e = log.Debug()
		}
		if sub != nil {
			e = e.Str("subject", sub.Subject)
		}
		e.Err(err).Msg("NATS client")
	}
}

// replicaWarnings names the resources, created earlier by another client,
// that have fewer replicas than this client would have given them: on a
// cluster, losing the node that holds such a resource stops every run.
// Settings apply when a resource is created, so they are not changed here
// (an operator raises them).
func (r *resources) replicaWarnings(ctx context.Context, want int) []string {
	var out []string
	for _, name := range []string{TaskStream, JournalStream, "KV_" + ResultsBucket, "OBJ_" + SkillsBucket} {
		s, err := r.js.Stream(ctx, name)
		if err != nil {
			continue
		}
		if n := s.CachedInfo().Config.Replicas; n < want {
			out = append(out, fmt.Sprintf("JetStream stream %s has %d replica(s), fewer than the %d this cluster allows: losing the node that holds it stops runs; raise it with: nats stream edit %s --replicas %d",
				name, n, want, name, want))
		}
	}
	return out
}

// defaultReplicas is 1 on a single server and 3 (or the cluster's size,
// if smaller) in a cluster: a run then survives losing a node.
//
// N23: set at creation only.
func defaultReplicas(nc *nats.Conn) int {
	if nc.ConnectedClusterName() == "" {
		return 1
	}
	return max(1, min(3, len(nc.Servers())))
}

func (r *resources) setup(ctx context.Context, replicas int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	js, err := jetstream.New(r.nc)
	if err != nil {
		return err
	}
	r.js = js
	// Looked up first and created only when missing: clients starting
	// together must not race to update the same resource (in a cluster,
	// concurrent create-or-update calls can stall). Settings apply when a
	// resource is created.
	r.tasks, err = ensure(ctx, func() (jetstream.Stream, error) { return js.Stream(ctx, TaskStream) },
		func() (jetstream.Stream, error) {
			return js.CreateStream(ctx, jetstream.StreamConfig{
				Name:        TaskStream,
				Description: "fsd task messages: one per task attempt, removed when a worker acks it",
				Subjects:    []string{taskSubjects + ".>"},
				Retention:   jetstream.WorkQueuePolicy,
				Storage:     jetstream.FileStorage,
				Replicas:    replicas,
				// A resumed coordinator publishes the tasks it had
				// dispatched again: within this window the copy is dropped
				// as a duplicate.
				Duplicates: 24 * time.Hour,
			})
		}, jetstream.ErrStreamNotFound, jetstream.ErrStreamNameAlreadyInUse)
	if err != nil {
		return fmt.Errorf("stream %s: %w", TaskStream, err)
	}
	r.results, err = ensure(ctx, func() (jetstream.KeyValue, error) { return js.KeyValue(ctx, ResultsBucket) },
		func() (jetstream.KeyValue, error) {
			return js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
				Bucket:      ResultsBucket,
				Description: "fsd task outcomes, keyed run.task.attempt, written once",
				History:     1,
				TTL:         retention,
				Storage:     jetstream.FileStorage,
				Replicas:    replicas,
			})
		}, jetstream.ErrBucketNotFound, jetstream.ErrBucketExists)
	if err != nil {
		return fmt.Errorf("key-value bucket %s: %w", ResultsBucket, err)
	}
	store, err := ensure(ctx, func() (jetstream.ObjectStore, error) { return js.ObjectStore(ctx, SkillsBucket) },
		func() (jetstream.ObjectStore, error) {
			return js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
				Bucket:      SkillsBucket,
				Description: "fsd skill files and scripts, named by SHA-256",
				TTL:         retention,
				Storage:     jetstream.FileStorage,
				Replicas:    replicas,
			})
		}, jetstream.ErrBucketNotFound, jetstream.ErrBucketExists)
	if err != nil {
		return fmt.Errorf("object store %s: %w", SkillsBucket, err)
	}
	r.objs = objects{store: store}
	r.journal, err = ensure(ctx, func() (jetstream.Stream, error) { return js.Stream(ctx, JournalStream) },
		func() (jetstream.Stream, error) {
			return js.CreateStream(ctx, jetstream.StreamConfig{
				Name:        JournalStream,
				Description: "fsd task transcripts, one message per entry, on fsd.journal.RUN.TASK.ATTEMPT",
				Subjects:    []string{journalSubjects + ".>"},
				Retention:   jetstream.LimitsPolicy,
				MaxAge:      retention,
				Storage:     jetstream.FileStorage,
				Replicas:    replicas,
			})
		}, jetstream.ErrStreamNotFound, jetstream.ErrStreamNameAlreadyInUse)
	if err != nil {
		return fmt.Errorf("stream %s: %w", JournalStream, err)
	}
	if r.jsj, err = jetstream.New(r.nc, jetstream.WithPublishAsyncTimeout(journalAckWait)); err != nil {
		return err
	}
	return nil
}

// journalAckWait bounds the wait for a journal entry's ack: past it the
// entry counts as lost and the step waiting for it fails.
const journalAckWait = 30 * time.Second

// ensure looks a resource up and creates it when it is missing; when
// another client created it in between, it looks it up again (bounded).
func ensure[T any](ctx context.Context, get, create func() (T, error), missing, exists error) (T, error) {
	var zero T
	for range 5 {
		v, err := get()
		if err == nil {
			return v, nil
		}
		if !errors.Is(err, missing) {
			return zero, err
		}
		v, err = create()
		if err == nil {
			return v, nil
		}
		if !errors.Is(err, exists) {
			return zero, err
		}
		if err := ctx.Err(); err != nil {
			return zero, err
		}
	}
	return zero, errors.New("created and removed by others, over and over")
}

// Close sends what is buffered and closes the connection.
func (r *resources) Close() {
	if r == nil || r.nc == nil {
		return
	}
	_ = r.nc.FlushTimeout(5 * time.Second)
	r.nc.Close()
}
