package runrecord

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/fsdrun/fsd/journal"
)

// Key authenticates what fsd writes into a run record for its own later
// use — the answers to approvals, and run.json's workflow path and
// digests, which decide what a resume runs — so that whoever can write a
// record folder, but cannot read the key, cannot forge them. Each run
// seals with its own secret, derived from the key and the run's id (its
// folder's name): a sealed answer or run.json copied into another run's
// folder does not verify there.
//
// The key lives outside every record (KeyFile, readable by its owner
// only) and is shared by every fsd process of the user: a run, fsd
// approve from another shell and fsd resume all seal and verify with it.
// A process running as the same user (a trusted skill's program
// included) can read it: the key guards against folders written by
// others, not against the user's own programs. The zero Key seals
// nothing, and nothing verifies under it.
type Key struct{ secret []byte }

// keyBytes is a key's length: a SHA-256 block's worth is more than
// HMAC-SHA-256 needs.
const keyBytes = 32

// NewKey is a Key of secret (tests; a service that keeps its own).
func NewKey(secret []byte) Key { return Key{secret: append([]byte(nil), secret...)} }

// IsZero reports whether k is the zero Key.
func (k Key) IsZero() bool { return len(k.secret) == 0 }

// KeyFile is where UserKey keeps the user's key: fsd/record.key in the
// user's configuration folder ($XDG_CONFIG_HOME, else ~/.config, on Linux).
func KeyFile() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("run record key: %w; set XDG_CONFIG_HOME (or HOME) to a folder fsd may keep its key in", err)
	}
	return filepath.Join(dir, "fsd", "record.key"), nil
}

// UserKey reads the user's key from KeyFile, making it (random, mode
// 0600) the first time. Two processes making it at once end with the same
// key: the file appears whole, once.
func UserKey() (Key, error) {
	path, err := KeyFile()
	if err != nil {
		return Key{}, err
	}
	k, err := readKey(path)
	if errors.Is(err, os.ErrNotExist) {
		if err = makeKey(path); err == nil || errors.Is(err, os.ErrExist) {
			k, err = readKey(path)
		}
	}
	if err != nil {
		return Key{}, fmt.Errorf("run record key: %w", err)
	}
	return k, nil
}

func readKey(path string) (Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Key{}, err
	}
	secret, err := hex.DecodeString(string(trimSpace(b)))
	if err != nil || len(secret) < keyBytes {
		return Key{}, fmt.Errorf("%s is not a key fsd wrote (want %d hex digits); remove it to make a new one (answers and runs sealed with it will not verify)", path, 2*keyBytes)
	}
	return Key{secret: secret}, nil
}

// makeKey writes a new key aside and links it into place: the file
// appears whole or not at all, and a key already there stands.
func makeKey(path string) error {
	secret := make([]byte, keyBytes)
	if _, err := io.ReadFull(rand.Reader, secret); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".record-key-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(hex.EncodeToString(secret) + "\n"); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Link(tmp.Name(), path)
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// runSecret is run id's own secret.
func (k Key) runSecret(runID string) []byte {
	m := hmac.New(sha256.New, k.secret)
	m.Write([]byte("fsd run record\x00" + runID))
	return m.Sum(nil)
}

// Seal is the seal of msg, of what kind, in run id: hex HMAC-SHA-256
// under the run's secret; "" under the zero Key. kind keeps a seal of
// one kind of thing from standing for another.
func (k Key) Seal(runID, kind string, msg []byte) string {
	if k.IsZero() {
		return ""
	}
	m := hmac.New(sha256.New, k.runSecret(runID))
	m.Write([]byte(kind + "\x00"))
	m.Write(msg)
	return hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether seal is k's seal of msg, of what kind, in run
// id. Nothing verifies under the zero Key.
func (k Key) Verify(runID, kind string, msg []byte, seal string) bool {
	if k.IsZero() || seal == "" {
		return false
	}
	got, err := hex.DecodeString(seal)
	if err != nil {
		return false
	}
	want, _ := hex.DecodeString(k.Seal(runID, kind, msg))
	return hmac.Equal(got, want)
}

// summaryKind is what run.json's seal is of (Key.Seal's kind).
const summaryKind = "run.json workflow and digests"

// summaryMsg is what run.json's seal covers: the workflow it names, the
// digests a resume compares and the workspace it works in, in one
// unambiguous encoding (a record without a workspace encodes as before).
func summaryMsg(s Summary) []byte {
	b, _ := json.Marshal(struct {
		Workflow  string          `json:"workflow"`
		Digests   journal.Digests `json:"digests"`
		Workspace string          `json:"workspace,omitempty"`
	}{s.Workflow, s.Digests, s.Workspace}) // strings and a map of strings always encode
	return b
}

// SealSummary is the seal of s's Workflow, Digests and Workspace for run
// s.ID.
func SealSummary(key Key, s Summary) string { return key.Seal(s.ID, summaryKind, summaryMsg(s)) }

// VerifySummary reports whether s.Seal is fsd's seal of s's Workflow,
// Digests and Workspace for run s.ID (the record folder's name).
func VerifySummary(key Key, s Summary) bool {
	return key.Verify(s.ID, summaryKind, summaryMsg(s), s.Seal)
}
