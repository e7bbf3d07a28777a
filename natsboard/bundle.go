package natsboard

// Skills reach workers as bundles: every file of the skill's folder,
// each stored once in the object store under its SHA-256, and an index
// (path, digest, size, executable bit) stored the same way. A worker
// fetches the index by its digest, then each file, checks every digest
// and writes the folder into its cache.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Bounds of a bundle: a skill folder is a few files, not a repository.
const (
	maxBundleFiles = 4096
	maxBundleBytes = 256 << 20
)

// ErrDigestMismatch is returned when an object's content does not hash to
// the digest it is stored under: it was changed after it was published.
var ErrDigestMismatch = errors.New("digest mismatch")

type bundleFile struct {
	Path   string `json:"path"` // slash-separated, relative to the skill's folder
	Digest string `json:"sha256"`
	Size   int64  `json:"size"`
	Exec   bool   `json:"exec,omitempty"`
}

type bundleIndex struct {
	V     int          `json:"v"`
	Files []bundleFile `json:"files"`
}

// digest is the hex SHA-256 of data.
func digest(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// objectName is the object store name of content with digest d.
func objectName(d string) string { return "sha256-" + d }

// checkDigest refuses a digest that is not a hex SHA-256: digests come in
// task messages, and one names a folder or file of the worker's cache.
func checkDigest(d string) error {
	if len(d) != 2*sha256.Size || strings.Trim(d, "0123456789abcdef") != "" {
		return fmt.Errorf("%q is not a SHA-256 digest; refusing it", d)
	}
	return nil
}

// readBundle reads a skill folder: its index and each file's content by
// digest. Hidden files and folders (.git, .fsd) and symlinks are left out:
// a bundle carries only what the folder itself holds.
func readBundle(dir string) (index []byte, files map[string][]byte, err error) {
	files = map[string][]byte{}
	var idx bundleIndex
	idx.V = WireVersion
	var total int64
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if len(idx.Files) == maxBundleFiles {
			return fmt.Errorf("more than %d files; keep the skill in a folder of its own", maxBundleFiles)
		}
		if total += info.Size(); total > maxBundleBytes {
			return fmt.Errorf("more than %d MiB; keep the skill in a folder of its own", maxBundleBytes>>20)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		d1 := digest(data)
		files[d1] = data
		idx.Files = append(idx.Files, bundleFile{Path: filepath.ToSlash(rel), Digest: d1, Size: int64(len(data)), Exec: info.Mode()&0o111 != 0})
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("skill folder %s: %w", dir, err)
	}
	slices.SortFunc(idx.Files, func(a, b bundleFile) int { return strings.Compare(a.Path, b.Path) })
	index, err = json.Marshal(idx)
	return index, files, err
}

// bundleDigest is the digest a skill folder is published under; a worker
// trusts a bundle whose digest is one of its --trust folders'.
func bundleDigest(dir string) (string, error) {
	index, _, err := readBundle(dir)
	if err != nil {
		return "", err
	}
	return digest(index), nil
}

// objects reads and writes content-addressed objects.
type objects struct{ store jetstream.ObjectStore }

// put stores data under its digest unless it is there already.
func (o objects) put(ctx context.Context, data []byte) (d string, err error) {
	err = retry(ctx, func(ctx context.Context) error {
		d, err = o.putOnce(ctx, data)
		return err
	})
	return d, err
}

// transient reports whether a request may succeed if made again: nobody
// answered, or not in time (a cluster electing a leader after losing a
// node, a reconnect). A publish that no stream answered is one: the
// client maps no responders to ErrNoStreamResponse after its own two
// quick tries, shorter than a leader election takes.
func transient(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrConnectionClosed) ||
		errors.Is(err, nats.ErrDisconnected) || errors.Is(err, nats.ErrConnectionReconnecting)
}

// attemptWait bounds one attempt of retry: a request whose reply was lost
// (a reconnect, a leader change, a stream that stores nothing) is made
// again instead of waiting out the caller's context (a run's --timeout).
var attemptWait = 10 * time.Second

// retry calls f until it succeeds, fails for good, or has failed
// transiently 10 times (about 5 s of waiting between attempts in all);
// each attempt gets at most attemptWait.
//
// N8: a transient error is tried again, each try bounded.
func retry(ctx context.Context, f func(context.Context) error) error {
	var err error
	for i := range 10 {
		actx, cancel := context.WithTimeout(ctx, attemptWait)
		err = f(actx)
		cancel()
		if err == nil || !transient(err) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(time.Duration(i+1) * 100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return err
}

func (o objects) putOnce(ctx context.Context, data []byte) (string, error) {
	d := digest(data)
	if _, err := o.store.GetInfo(ctx, objectName(d)); err == nil {
		return d, nil
	} else if !errors.Is(err, jetstream.ErrObjectNotFound) {
		return "", err
	}
	if _, err := o.store.PutBytes(ctx, objectName(d), data); err != nil {
		return "", err
	}
	return d, nil
}

// get fetches the object with digest d and checks that its content hashes
// to d.
func (o objects) get(ctx context.Context, d string) ([]byte, error) {
	var data []byte
	err := retry(ctx, func(ctx context.Context) error {
		var err error
		data, err = o.store.GetBytes(ctx, objectName(d))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("object %s: %w", objectName(d), err)
	}
	if got := digest(data); got != d {
		return nil, fmt.Errorf("object %s: %w: its content hashes to sha256 %s; refusing it", objectName(d), ErrDigestMismatch, got)
	}
	return data, nil
}

// publishBundle stores a skill folder and returns its index digest.
func (o objects) publishBundle(ctx context.Context, dir string) (string, error) {
	index, files, err := readBundle(dir)
	if err != nil {
		return "", err
	}
	for _, data := range files {
		if _, err := o.put(ctx, data); err != nil {
			return "", fmt.Errorf("publish %s: %w", dir, err)
		}
	}
	return o.put(ctx, index)
}

// fetchBundle writes the bundle with index digest d into cache (once) and
// returns its folder. Every file is digest-checked before it is written;
// the folder appears whole or not at all.
//
// N9: a skill folder lands in the cache whole or not at all.
func (o objects) fetchBundle(ctx context.Context, cache, d string) (string, error) {
	if err := checkDigest(d); err != nil {
		return "", fmt.Errorf("bundle: %w", err)
	}
	final := filepath.Join(cache, "bundles", d)
	if _, err := os.Stat(final); err == nil {
		return final, nil
	}
	index, err := o.get(ctx, d)
	if err != nil {
		return "", err
	}
	var idx bundleIndex
	dec := json.NewDecoder(bytes.NewReader(index))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&idx); err != nil {
		return "", fmt.Errorf("bundle %s: bad index: %w", d, err)
	}
	if err := os.MkdirAll(filepath.Join(cache, "bundles"), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Join(cache, "bundles"), ".fetch-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	for _, f := range idx.Files {
		if !filepath.IsLocal(filepath.FromSlash(f.Path)) {
			return "", fmt.Errorf("bundle %s: path %q leaves the skill folder; refusing it", d, f.Path)
		}
		data, err := o.get(ctx, f.Digest)
		if err != nil {
			return "", fmt.Errorf("bundle %s: %s: %w", d, f.Path, err)
		}
		path := filepath.Join(tmp, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", err
		}
		mode := os.FileMode(0o644)
		if f.Exec {
			mode = 0o755
		}
		if err := os.WriteFile(path, data, mode); err != nil {
			return "", err
		}
	}
	if err := os.Rename(tmp, final); err != nil {
		if _, serr := os.Stat(final); serr == nil {
			return final, nil // another task of this worker fetched it first
		}
		return "", err
	}
	return final, nil
}

// fetchFile writes the object with digest d into cache (once) and returns
// its path: how a worker gets the scripted model's script.
//
// N9: every object is checked against the digest asked for.
func (o objects) fetchFile(ctx context.Context, cache, d, name string) (string, error) {
	if err := checkDigest(d); err != nil {
		return "", fmt.Errorf("file %s: %w", name, err)
	}
	dir := filepath.Join(cache, "files", d)
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	data, err := o.get(ctx, d)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".fetch-")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return path, os.Rename(tmp.Name(), path)
}
