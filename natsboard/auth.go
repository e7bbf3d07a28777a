package natsboard

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"strings"
	"sync"
)

// Task messages and outcomes are authenticated, so that the right to
// publish on fsd's subjects is not enough to forge them:
//
//   - A task message carries a MAC under the coordinator's key over its
//     whole text (run, task, attempt, goal, input, bundle and script
//     digests, …). A worker given the same key (--signing-key) runs only
//     messages whose MAC it can check; a worker without one cannot tell,
//     and NATS permissions must keep others from publishing tasks.
//   - A task message carries its outcome key, a secret derived from the
//     coordinator's key and the attempt's result key. The worker MACs the
//     outcome it commits with it; the coordinator recomputes it and
//     refuses an outcome whose MAC does not match: its task fails saying
//     so. Whoever can read task messages (workers, and anyone NATS lets
//     read FSD_TASKS) can learn outcome keys: NATS permissions must keep
//     that to fsd's own roles (docs/scale-out.md lists them).
//
// The MAC goes first in the JSON object, spliced into the bytes that
// were MACed, so checking it needs no re-encoding: {"mac":"HEX",REST} is
// valid for the bytes {REST}.

// KeySize is the length of a signing key, in bytes.
const KeySize = 32

// NewKey returns a random signing key.
func NewKey() []byte {
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		panic(err) // crypto/rand does not fail on supported systems
	}
	return k
}

// ReadKey reads a signing key from a file: at least KeySize bytes, hex
// or raw (`openssl rand -hex 32 > fsd.key`). Surrounding space is ignored.
func ReadKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t := bytes.TrimSpace(b)
	if k, err := hex.DecodeString(string(t)); err == nil {
		t = k
	}
	if len(t) < KeySize {
		return nil, fmt.Errorf("signing key %s: %d bytes; want at least %d (openssl rand -hex %d > %s)", path, len(t), KeySize, KeySize, path)
	}
	return t, nil
}

const macPrefix = `{"mac":"`

// macState is an HMAC-SHA256 under one key, with room for what it MACs:
// the parts of a MAC are written to one buffer and hashed at once, the
// data after them as it is, and its sum goes to an array the state keeps,
// so a MAC allocates nothing past the state itself.
type macState struct {
	h hash.Hash
	// used: h has MACed something, and is reset before the next MAC. A
	// fresh one is not: its first Reset would save its keyed state, which
	// a state used once (sign, verify) never reads.
	used bool
	// buf holds the parts, at first in small: grown from nothing, it cost
	// a worker's one-use state (an outcome's MAC) two allocations.
	buf   []byte
	small [128]byte
	sum   [sha256.Size]byte
	// key and want hold an outcome key derived with h and the MAC
	// expected under it (checkOutcome).
	key, want [2 * sha256.Size]byte
}

func newMACState(key []byte) *macState { return &macState{h: hmac.New(sha256.New, key)} }

// appendHex appends to dst the hex MAC of parts and then of data's
// pieces as one part (when there are any), each part followed by a zero
// byte.
func (s *macState) appendHex(dst []byte, parts []string, data ...[]byte) []byte {
	if s.used {
		s.h.Reset()
	}
	s.used = true
	return s.appendHexWith(s.h, dst, parts, data...)
}

// appendHexWith is appendHex under h, fresh, with s's buffers.
func (s *macState) appendHexWith(h hash.Hash, dst []byte, parts []string, data ...[]byte) []byte {
	if s.buf == nil {
		s.buf = s.small[:0]
	}
	s.buf = s.buf[:0]
	for _, p := range parts {
		s.buf = append(append(s.buf, p...), 0)
	}
	h.Write(s.buf)
	for _, d := range data {
		h.Write(d)
	}
	if len(data) > 0 {
		h.Write(zero)
	}
	return hex.AppendEncode(dst, h.Sum(s.sum[:0]))
}

var zero = []byte{0}

// macPool keeps the HMAC states of one key: a coordinator MACs every task
// message and derives every outcome key with its own key, and would
// otherwise set an HMAC up for each.
type macPool struct{ p sync.Pool }

func newMACPool(key []byte) *macPool {
	m := &macPool{}
	m.p.New = func() any { return newMACState(key) }
	return m
}

func (m *macPool) get() *macState { return m.p.Get().(*macState) }

func (m *macPool) put(s *macState) {
	if cap(s.buf) <= 1<<20 { // a large outcome's buffer is not kept
		m.p.Put(s)
	}
}

// sign returns data (a JSON object) with the MAC of key over purpose and
// data spliced in first.
func sign(data []byte, key []byte, purpose ...string) []byte {
	return signWith(newMACState(key), data, purpose...)
}

// signWith is sign with the key's state s.
func signWith(s *macState, data []byte, purpose ...string) []byte {
	if len(data) < 2 || data[0] != '{' {
		return data
	}
	sep := ","
	if data[1] == '}' {
		sep = ""
	}
	out := make([]byte, 0, len(macPrefix)+2*sha256.Size+len(data)+1)
	out = s.appendHex(append(out, macPrefix...), purpose, data)
	return append(append(append(out, '"'), sep...), data[1:]...)
}

// macRoom is what signing a JSON object puts before its first key:
// {"mac":"HEX", where the object had its opening brace.
const macRoom = len(macPrefix) + 2*sha256.Size + len(`",`) - 1

// signAfter is signWith(s, b[macRoom:], purpose...) in place: the MAC
// goes in the room b keeps before the object.
func signAfter(s *macState, b []byte, purpose ...string) []byte {
	data := b[macRoom:]
	if len(data) < 2 || data[0] != '{' || data[1] == '}' {
		return signWith(s, data, purpose...)
	}
	copy(b, macPrefix)
	s.appendHex(b[len(macPrefix):len(macPrefix)], purpose, data) // MACed before written: it fills the room
	b[macRoom-1], b[macRoom] = '"', ','
	return b
}

var (
	errUnsigned = errors.New("it carries no MAC")
	errBadMAC   = errors.New("its MAC does not match")
)

// verify checks the MAC that sign spliced into data.
func verify(data []byte, key []byte, purpose ...string) error {
	s := newMACState(key)
	return s.verifyWith(s.h, data, purpose...)
}

// verifyWith is verify under h, fresh, with s's buffers.
func (s *macState) verifyWith(h hash.Hash, data []byte, purpose ...string) error {
	rest, ok := bytes.CutPrefix(data, []byte(macPrefix))
	if !ok || len(rest) < 2*sha256.Size+1 {
		return errUnsigned
	}
	got, rest := rest[:2*sha256.Size], rest[2*sha256.Size:]
	switch {
	case bytes.HasPrefix(rest, []byte(`",`)):
		rest = rest[2:]
	case bytes.HasPrefix(rest, []byte(`"}`)):
		rest = rest[1:]
	default:
		return errUnsigned
	}
	// What was MACed is the object '{' and rest.
	if !hmac.Equal(got, s.appendHexWith(h, s.want[:0], purpose, openBrace, rest)) {
		return errBadMAC
	}
	return nil
}

var openBrace = []byte{'{'}

// outcomeKey is the secret an attempt's outcome is MACed with: derived
// from the coordinator's key, so a resumed coordinator with the same key
// checks outcomes committed while it was down.
func outcomeKey(key []byte, resultKey string) string {
	return outcomeKeyWith(newMACState(key), resultKey)
}

// outcomeKeyWith is outcomeKey with the coordinator key's state s.
func outcomeKeyWith(s *macState, resultKey string) string {
	var b [2 * sha256.Size]byte
	return string(s.appendHex(b[:0], []string{"fsd outcome key", resultKey}))
}

// signOutcome MACs an outcome's JSON with the attempt's outcome key
// (hex, from its task message); unsigned when there is none (a message
// of a coordinator that sends none: it checks none).
func signOutcome(data []byte, outcomeKey, resultKey string) []byte {
	if outcomeKey == "" {
		return data
	}
	return sign(data, []byte(outcomeKey), "fsd outcome", resultKey)
}

// checkOutcome checks an outcome committed under resultKey against this
// coordinator's key.
//
// The outcome key differs per attempt, so each check sets an HMAC up; the
// rest (the key, the parts, the sums) lives in the coordinator key's
// pooled state.
//
// U32: crypto/hmac under the attempt's outcome key, nothing copied.
func (c *Coordinator) checkOutcome(resultKey string, data []byte) error {
	s := c.macs.get()
	defer c.macs.put(s)
	key := s.appendHex(s.key[:0], []string{"fsd outcome key", resultKey})
	return s.verifyWith(hmac.New(sha256.New, key), data, "fsd outcome", resultKey)
}

// signTask MACs a task message's JSON with the coordinator's key.
func signTask(data, key []byte) []byte { return sign(data, key, "fsd task") }

// checkTask checks a task message against a worker's signing key.
func checkTask(data, key []byte) error { return verify(data, key, "fsd task") }

// refusedOutcome is the error of a task whose committed outcome does not
// carry the MAC of the attempt's outcome key.
func refusedOutcome(resultKey string, err error) string {
	why := "it is not authenticated"
	if errors.Is(err, errBadMAC) {
		why = "its MAC does not match this run's key"
	}
	return strings.Join([]string{
		fmt.Sprintf("its outcome %s in bucket %s was refused: %s.", resultKey, ResultsBucket, why),
		"Something other than a worker that ran the task wrote it (who may publish to NATS? see NATS permissions in docs/scale-out.md),",
		"or the run was resumed with another signing key than it started with (--signing-key)",
	}, " ")
}
