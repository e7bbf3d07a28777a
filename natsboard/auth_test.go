package natsboard

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/work"
)

// testKey is a coordinator's signing key in tests that write outcomes as
// a worker would.
var testKey = bytes.Repeat([]byte{7}, KeySize)

// signedOutcome is data as a worker commits it for resultKey to a
// coordinator whose key is key.
func signedOutcome(key []byte, resultKey string, data []byte) []byte {
	return signOutcome(data, outcomeKey(key, resultKey), resultKey)
}

func TestSignVerify(t *testing.T) {
	t.Parallel()
	key, other := NewKey(), NewKey()
	for _, data := range []string{`{}`, `{"v":1,"result":"ok"}`} {
		s := sign([]byte(data), key, "p")
		if err := verify(s, key, "p"); err != nil {
			t.Errorf("%s: %v", data, err)
		}
		if err := verify(s, other, "p"); err != errBadMAC {
			t.Errorf("%s under another key: %v", data, err)
		}
		if err := verify(s, key, "q"); err != errBadMAC {
			t.Errorf("%s for another purpose: %v", data, err)
		}
		if err := verify([]byte(data), key, "p"); err != errUnsigned {
			t.Errorf("%s unsigned: %v", data, err)
		}
		var v map[string]any
		if err := json.Unmarshal(s, &v); err != nil || len(v["mac"].(string)) != 64 {
			t.Errorf("%s signed is not JSON with a mac: %s (%v)", data, s, err)
		}
	}
	tampered := bytes.Replace(sign([]byte(`{"result":"ok"}`), key, "p"), []byte("ok"), []byte("no"), 1)
	if err := verify(tampered, key, "p"); err != errBadMAC {
		t.Errorf("tampered: %v", err)
	}
}

// TestForgedOutcomeRefused: anyone who may write to the results bucket
// can commit an attempt's outcome before its worker does (create-only:
// the worker's own is then discarded). An outcome without the MAC of the
// attempt's outcome key — unsigned, or signed with a key of the forger's
// choosing — fails its task saying so; it never becomes the answer.
func TestForgedOutcomeRefused(t *testing.T) {
	t.Parallel()
	srv := runServer(t)
	r := testJS(t, srv.ClientURL())
	c, err := Connect(context.Background(), srv.ClientURL(), Options{})
	must(t, err)
	defer c.Close()
	forged, _ := json.Marshal(Outcome{V: WireVersion, Outcome: work.Outcome{Result: "forged answer"}})
	for name, value := range map[string][]byte{
		"unsigned":          forged,
		"forger's own key":  signedOutcome(NewKey(), ResultKey("forged", "own-key", 1), forged),
		"another task's":    signedOutcome(c.opts.Key, ResultKey("forged", "elsewhere", 1), forged),
		"tampered after it": bytes.Replace(signedOutcome(c.opts.Key, ResultKey("forged", "tampered-after-it", 1), forged), []byte("forged answer"), []byte("forged answex"), 1),
	} {
		task := strings.ReplaceAll(strings.ReplaceAll(name, " ", "-"), "'", "")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := r.results.Create(ctx, ResultKey("forged", task, 1), value)
		must(t, err)
		res, err := c.Dispatch(ctx, &work.Attempt{Run: "forged", Task: task, Number: 1, Goal: "g"}, nil, nil)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.Result != "" || !strings.Contains(res.Error, "was refused") || !strings.Contains(res.Error, "NATS permissions") {
			t.Errorf("%s: a forged outcome gave result %v, error %q", name, res.Result, res.Error)
		}
	}
	// The outcome a worker signs with the key its message carried is taken.
	ok := signedOutcome(c.opts.Key, ResultKey("forged", "real", 1), forged)
	_, err = r.results.Create(context.Background(), ResultKey("forged", "real", 1), ok)
	must(t, err)
	res, err := c.Dispatch(context.Background(), &work.Attempt{Run: "forged", Task: "real", Number: 1, Goal: "g"}, nil, nil)
	if err != nil || res.Result != "forged answer" {
		t.Errorf("an authenticated outcome: %v, %+v", err, res)
	}
}

// TestForgedTaskRefused: anyone who may publish on fsd.tasks.> can queue
// a task message naming any skill (a trusted bundle) with their own goal
// and input. A worker given --signing-key runs only messages signed with
// it: an unsigned one, one signed with another key, and a signed one
// altered after signing are refused — not run, and their attempts fail
// saying why — while a signed one runs.
func TestForgedTaskRefused(t *testing.T) {
	t.Parallel() // it waits on subprocesses and its own server
	srv := runServer(t)
	key := NewKey()
	var mu sync.Mutex
	ran := map[string]bool{}
	serve(t, srv.ClientURL(), WorkerOptions{SigningKey: key, Name: "w1",
		Model: func(string, string) (model.Model, error) { return nil, nil },
		Work: func(_ context.Context, a *work.Attempt, _ work.Options) *work.Outcome {
			mu.Lock()
			defer mu.Unlock()
			ran[a.Task] = true
			return &work.Outcome{Result: "ran " + a.Goal}
		}})
	r := testJS(t, srv.ClientURL())
	message := func(task string) []byte {
		k := ResultKey("forged-tasks", task, 1)
		data, err := json.Marshal(Message{V: WireVersion, Attempt: work.Attempt{Run: "forged-tasks", Task: task, Number: 1, Goal: "the coordinator's goal"},
			Events: eventsSubject("forged-tasks", task, 1), OutcomeKey: outcomeKey(key, k)})
		must(t, err)
		return data
	}
	for task, data := range map[string][]byte{
		"unsigned":  message("unsigned"),
		"other-key": signTask(message("other-key"), NewKey()),
		"altered":   bytes.Replace(signTask(message("altered"), key), []byte("the coordinator's goal"), []byte("the forger's goal!!!!"), 1),
		"signed":    signTask(message("signed"), key),
	} {
		_, err := r.js.Publish(context.Background(), taskSubject("", ""), data)
		must(t, err)
		var out *Outcome
		until(t, "an outcome for "+task, func() bool {
			e, err := r.results.Get(context.Background(), ResultKey("forged-tasks", task, 1))
			if err == jetstream.ErrKeyNotFound || err != nil {
				return false
			}
			out = &Outcome{}
			must(t, json.Unmarshal(e.Value(), out))
			return true
		})
		mu.Lock()
		didRun := ran[task]
		mu.Unlock()
		if strings.HasPrefix(task, "signed") {
			if !didRun || out.Result != "ran the coordinator's goal" {
				t.Errorf("%s: ran %v, outcome %+v", task, didRun, out.Outcome)
			}
			continue
		}
		if didRun || !strings.Contains(out.Error, "worker w1 refused its task message") {
			t.Errorf("%s: ran %v, outcome error %q", task, didRun, out.Error)
		}
	}
}

// TestPooledMACs: a coordinator's pooled HMAC states, reused across
// messages, MAC as a fresh HMAC does: HMAC-SHA256 of each part followed
// by a zero byte.
func TestPooledMACs(t *testing.T) {
	t.Parallel()
	key := NewKey()
	pool := newMACPool(key)
	for _, data := range []string{`{"v":1,"goal":"a longer goal than the next one"}`, `{"v":1}`, `{}`} {
		s := pool.get()
		got := signWith(s, []byte(data), "fsd task")
		ok := outcomeKeyWith(s, "run.task.1")
		pool.put(s)
		h := hmac.New(sha256.New, key)
		h.Write([]byte("fsd task\x00" + data + "\x00"))
		if want := hex.EncodeToString(h.Sum(nil)); !bytes.HasPrefix(got, []byte(macPrefix+want+`"`)) {
			t.Errorf("%s: signed %s, want the MAC %s", data, got, want)
		}
		if err := verify(got, key, "fsd task"); err != nil {
			t.Errorf("%s: %v", data, err)
		}
		if want := outcomeKey(key, "run.task.1"); ok != want {
			t.Errorf("outcome key %s, want %s", ok, want)
		}
	}
}
