package natsboard

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/internal/jsonw"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/work"
)

// TestAppendMessage: the task message appender writes every field
// json.Marshal writes (a field added to Message, work.Attempt, work.Limits
// or board.DepResult fails here).
func TestAppendMessage(t *testing.T) {
	if !jsonw.Matches(appendMessage) {
		t.Fatal("appendMessage does not write what json.Marshal writes for a filled Message")
	}
}

// FuzzMarshalMessage: for any task message, marshalMessage writes what
// json.Marshal writes, and fails where it fails.
func FuzzMarshalMessage(f *testing.F) {
	jsonw.AddSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := jsonw.Compare(data, marshalMessage); err != nil {
			t.Fatal(err)
		}
	})
}

// messageSeeds are task messages a decoder could get wrong: escapes of
// every kind, surrogates lone and paired, invalid UTF-8, nulls, unknown
// and duplicated keys, keys in another case or order, numbers that are
// no int, space between tokens, raw outputs, a MAC that is no string.
var messageSeeds = []string{
	`{"v":3,"run":"r","task":"t","attempt":1,"goal":"g","limits":{"max-steps":0,"max-transcript-messages":0},"events":"e","max-deliveries":5}`,
	`{"mac":"00ff","v":3,"run":"r","task":"t\n\"\\\/\b\f\r\t\u00e9\ud83c\udf89\ud800x\udc00\u0000","attempt":1,"goal":"g"}`,
	`{"v":3,"task":"a\u002","goal":"g"}`, `{"v":3,"task":"a\'"}`, "{\"v\":3,\"task\":\"a\x01\"}", "{\"task\":\"\xff\xfe\xed\xa0\x80\"}",
	`{"v":3,"task":"t","task":"u"}`, `{"v":3,"Task":"t"}`, `{"v":3,"task":"t","extra":[1,{"a":null}]}`, `{"task":"t","v":3}`,
	`{"v":null,"task":null,"deps":null,"limits":null,"handle-key":null,"builtins":null}`, `{"v":3,"task":"t"} `, ` {"v":3}`,
	`{"v":3, "task":"t"}`, `{"v":1e2,"task":"t"}`, `{"v":3.0}`, `{"v":-0,"attempt":99999999999999999999}`, `{"v":012}`,
	`{"v":3,"attempt":123456789012345678}`, `{"v":3,"attempt":-9223372036854775808}`, `{"v":3,"attempt":9223372036854775808}`,
	`{"deps":[{"task":"a","agent":"b","result":"c","output":{"x":[1,"y",true,null]}},{"task":"d","agent":"","result":"","output":null}]}`,
	`{"deps":[{"task":"a","output":"<"}],"builtins":["read","write",""]}`, `{"deps":[],"builtins":[]}`, `{"deps":[{}]}`,
	`{"deps":[{"result":"r","task":"t"}]}`, `{"deps":[{"task":"t"},]}`, `{"deps":[{"task":"t","output":}]}`,
	`{"limits":{"max-steps":8,"max-transcript-messages":200,"max-result-tokens":4000,"readers":"full","window-shed":"one","max-input-tokens":1,"max-output-tokens":2}}`,
	`{"limits":{"readers":"full","max-steps":8}}`, `{"limits":{}}`,
	`{"deadline":"2026-12-02T03:04:05.0000607Z"}`, `{"deadline":"2026-12-02T03:04:05+05:30"}`, `{"deadline":"2026-12-02"}`,
	`{"deadline":"2026-12-02T03:04:05\u005a"}`, `{"deadline":null}`, `{"deadline":3}`,
	`{"approval-timeout":1500000000,"handle-key":"AAECAwQ=","cache-scope":"wf"}`, `{"handle-key":""}`, `{"handle-key":"AAE"}`,
	`{"handle-key":"AA\nECAwQ="}`, `{"handle-key":"AA\u000aECAwQ="}`, `{"handle-key":"!!"}`, `{"handle-key":5}`,
	`{"turns":[{"role":"user","text":"hi"},{"role":"assistant","calls":[{"id":"c","name":"n","args":{"a":1}}]}]}`,
	`{"turns":[{"role":5}]}`, `{"turns":[]}`, `{"turns":{}}`,
	`{"mac":5,"v":3}`, `{"v":3,"mac":"00"}`, `{}`, `[]`, `null`, ``, `{`, `{"v":3,}`, `{"v":3}}`, `{"v":"3"}`,
}

// FuzzUnmarshalMessage: unmarshalMessage decodes what json.Unmarshal
// decodes, and fails where it fails, on a task message json.Marshal wrote
// (drawn from data) and on data itself, signed as a coordinator sends it
// and not (json.Unmarshal skips the MAC).
func FuzzUnmarshalMessage(f *testing.F) {
	jsonw.AddSeeds(f)
	for _, s := range messageSeeds {
		f.Add([]byte(s))
	}
	key := bytes.Repeat([]byte{7}, KeySize)
	signed := func(data []byte, m *Message) error { return unmarshalMessage(signTask(data, key), m) }
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, decode := range []func([]byte, *Message) error{unmarshalMessage, signed} {
			if err := jsonw.CompareDecode(data, decode); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestDecodeMessage: a task message as a coordinator sends it (signed,
// every field set, text that needs escaping, inherited turns) is decoded
// without json.Unmarshal of the whole (the fast path is taken, not only
// right), and as json.Unmarshal decodes it; input json.Marshal never
// writes is left to json.Unmarshal.
func TestDecodeMessage(t *testing.T) {
	var full Message
	jsonw.Fill(&full)
	full.Deadline = time.Date(2026, 12, 2, 3, 4, 5, 60700, time.FixedZone("x", 5*3600+30*60))
	full.Deps[0].Output = json.RawMessage(`{"a":[1,"x\u003cy",null]}`)
	plain := Message{V: WireVersion, Attempt: work.Attempt{Run: "r1", Task: "t17", Number: 1, Goal: "do task 17",
		Deps:   []board.DepResult{{TaskID: "t1", Agent: "worker", Result: "one"}},
		Turns:  []model.Message{{Role: model.User, Text: "hi\n"}},
		Limits: work.Limits{MaxSteps: 8, MaxTranscriptMessages: 200}}, Events: "fsd.events.r1.t17.1", MaxDeliveries: 5}
	for name, m := range map[string]*Message{"filled": &full, "plain": &plain} {
		data, err := marshalMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		data = signTask(data, NewKey())
		var got, want Message
		if !decodeMessage(data, &got) {
			t.Fatalf("%s: decodeMessage refused %s", name, data)
		}
		must(t, json.Unmarshal(data, &want))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: decodeMessage(%s)\n got %#v\nwant %#v", name, data, got, want)
		}
	}
	for _, in := range []string{`{"v":3,"Task":"t"}`, `{"task":"t","v":3}`, `{"v":3,"task":"t","task":"u"}`, `{"v":3,"task":null}`,
		`{"v":3, "task":"t"}`, `{"v":3,"task":"t","extra":1}`, `{"v":1e2}`, `{"v":3,"attempt":9223372036854775808}`} {
		var m Message
		if decodeMessage([]byte(in), &m) {
			t.Errorf("decodeMessage took %s, which only json.Unmarshal reads as json does", in)
		}
	}
}

// BenchmarkUnmarshalMessage decodes the task message of a fan-out's
// task and of its join (1,000 dependencies' results), signed.
func BenchmarkUnmarshalMessage(b *testing.B) {
	task := Message{V: WireVersion, Attempt: work.Attempt{Run: "r-20261202-0918-ab12", Task: "t17", Number: 1,
		Goal: "Answer the question of task 17 in one line.", Assignee: "worker", Model: "scripted",
		Limits: work.Limits{MaxSteps: 8, MaxTranscriptMessages: 200, MaxResultTokens: 4000}, Workspace: "/srv/fsd/work/r-20261202",
		HandleKey: bytes.Repeat([]byte{3}, 32), CacheScope: "fanout"}, Events: "fsd.events.r-20261202-0918-ab12.t17.1",
		MaxDeliveries: 5, OutcomeKey: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}
	join := task
	join.Task, join.Goal = "join", "Sum up the answers:\n- one line each"
	for i := range 1000 {
		join.Deps = append(join.Deps, board.DepResult{TaskID: "t" + string(rune('0'+i%10)), Agent: "worker", Result: "the answer to task \"17\"\n"})
	}
	for name, m := range map[string]*Message{"task": &task, "join": &join} {
		data, err := json.Marshal(m)
		if err != nil {
			b.Fatal(err)
		}
		data = signTask(data, NewKey())
		for _, dec := range []struct {
			name string
			fn   func([]byte, *Message) error
		}{{"json", func(d []byte, m *Message) error { return json.Unmarshal(d, m) }}, {"decoder", unmarshalMessage}} {
			b.Run(name+"/"+dec.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					var m Message
					if err := dec.fn(data, &m); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestSignedMessage: a task message written after room for its MAC and
// signed in place is the message marshalMessage writes, signed by
// signTask, on the appender's path and on json.Marshal's.
func TestSignedMessage(t *testing.T) {
	key := NewKey()
	pool := newMACPool(key)
	var full Message
	jsonw.Fill(&full)
	full.Deadline = time.Date(2026, 12, 2, 3, 4, 5, 60700, time.UTC)
	full.Deps[0].Output = json.RawMessage(`{"a":[1,"x\u003cy",null]}`)
	full.Turns = nil
	withTurns := full
	withTurns.Turns = []model.Message{{Role: model.User, Text: "hi\n"}}
	for name, m := range map[string]*Message{"appender": &full, "json": &withTurns, "empty": {}} {
		s := pool.get()
		got, err := signedMessage(s, m)
		pool.put(s)
		must(t, err)
		data, err := marshalMessage(m)
		must(t, err)
		if want := signTask(data, key); !bytes.Equal(got, want) {
			t.Errorf("%s: signed in place\n%s\nwant\n%s", name, got, want)
		}
		if err := checkTask(got, key); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
