package engine

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"

	"github.com/fsdrun/fsd/artifact"
	"github.com/fsdrun/fsd/runrecord"
)

// K1, K3, K6: handles makes the run's artifact store and says what run.json keeps of
// how its handles were made: the seed of drawn handles, or the id of the
// key keyed ones were derived with. A resume finds the same handles from
// either.
//
// Handles are keyed (artifact.NewKeyedStore) when the caller gives the
// project's key and no seeded source, and the journal a run goes on
// from, if any, was keyed too; else they are drawn from a seed, kept in
// run.json, as a run without a key and every record from before keyed
// handles has them.
func handles(opts *Options) (arts *artifact.Store, seed, keyID string, err error) {
	if j := journalOf(*opts); j != nil {
		if j.Summary.Seed == "" {
			if err := sameHandleKey(j.Summary, opts.HandleKey); err != nil {
				return nil, "", "", err
			}
		} else {
			b, err := hex.DecodeString(j.Summary.Seed)
			if err != nil || len(b) != 32 {
				return nil, "", "", fmt.Errorf("%w: bad seed in run.json", ErrNotResumable)
			}
			opts.Seed, opts.HandleKey = (*[32]byte)(b), nil
		}
	}
	if opts.Rand == nil && opts.Seed == nil && opts.HandleKey != nil {
		arts, err := artifact.NewKeyedStore(artifactKey(opts.HandleKey))
		if err != nil {
			return nil, "", "", fmt.Errorf("engine: %w", err)
		}
		return arts, "", handleKeyID(opts.HandleKey), nil
	}
	if opts.Rand == nil {
		if opts.Seed == nil {
			var b [32]byte
			if _, err := rand.Read(b[:]); err != nil {
				return nil, "", "", fmt.Errorf("engine: seed: %w", err)
			}
			opts.Seed = &b
		}
		seed = hex.EncodeToString(opts.Seed[:])
		opts.Rand = mrand.NewChaCha8(*opts.Seed)
	}
	return artifact.NewStore(opts.Rand), seed, "", nil
}

// artifactKey is what the project's key derives a run's handles with:
// the store's key, which a worker in another process is sent to derive
// the same handles (work.Attempt.HandleKey). The project's key itself
// never leaves the process that read it.
func artifactKey(projectKey []byte) []byte { return derive(projectKey, "fsd artifact handles") }

// handleKeyID names a project key in run.json without revealing it: a
// resume checks it derives handles with the key the run started with.
//
// K2: run.json holds this id, never the key.
func handleKeyID(projectKey []byte) string {
	return hex.EncodeToString(derive(projectKey, "fsd handle key id")[:8])
}

func derive(key []byte, label string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(label))
	return m.Sum(nil)
}

// sameHandleKey checks that a run with keyed handles goes on with the key
// it started with: another would give its skills other handles than the
// ones its journal's model responses name.
func sameHandleKey(s runrecord.Summary, key []byte) error {
	switch {
	case s.HandleKey == "":
		return fmt.Errorf("%w: run %s has neither a handle seed nor a handle key id in run.json", ErrNotResumable, s.ID)
	case key == nil:
		return fmt.Errorf("%w: run %s derived its handles from the project's handle key (%s), and none was given; resume it from its project",
			ErrNotResumable, s.ID, runrecord.HandleKeyFile)
	case handleKeyID(key) != s.HandleKey:
		return fmt.Errorf("%w: run %s derived its handles from another handle key than the project's %s has now (id %s, now %s); put the old key back to resume it",
			ErrNotResumable, s.ID, runrecord.HandleKeyFile, s.HandleKey, handleKeyID(key))
	}
	return nil
}
