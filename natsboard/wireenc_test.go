package natsboard

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/fsdrun/fsd/internal/jsonw"
)

// TestAppendOutcome: the outcome appender writes every field json.Marshal
// writes (a field added to Outcome, work.Outcome or model.Usage fails
// here); raw JSON is copied only when json.Marshal would copy it
// (jsonw's TestCompact).
func TestAppendOutcome(t *testing.T) {
	if !jsonw.Matches(appendOutcome) {
		t.Fatal("appendOutcome does not write what json.Marshal writes for a filled Outcome")
	}
}

// FuzzMarshalOutcome: for any outcome, marshalOutcome writes what
// json.Marshal writes, and fails where it fails.
func FuzzMarshalOutcome(f *testing.F) {
	jsonw.AddSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := jsonw.Compare(data, marshalOutcome); err != nil {
			t.Fatal(err)
		}
	})
}

// BenchmarkMarshalOutcome encodes the outcome of a one-step remote task:
// its answer, usage, worker and an inline transcript and events.
func BenchmarkMarshalOutcome(b *testing.B) {
	out := &Outcome{V: WireVersion}
	out.Result, out.Worker, out.Host, out.PID, out.Logged = "the answer to task 17", "w1", "host", 4242, 2
	out.Usage.InputTokens, out.Usage.OutputTokens, out.Usage.Estimated = 120, 12, true
	out.Log = []json.RawMessage{
		json.RawMessage(`{"seq":1,"time":"2026-12-02T09:18:40.123456789Z","kind":"message","message":{"role":"user","text":"do task 17 of the fan-out"}}`),
		json.RawMessage(`{"seq":2,"time":"2026-12-02T09:18:40.133456789Z","kind":"message","message":{"role":"assistant","text":"the answer to task 17"}}`),
	}
	out.Events = []json.RawMessage{json.RawMessage(`{"kind":"text","task":"t17","agent":"worker","text":"the answer to task 17","time":"2026-12-02T09:18:40.133456789Z"}`)}
	for _, enc := range []struct {
		name string
		fn   func(*Outcome) ([]byte, error)
	}{{"json", func(o *Outcome) ([]byte, error) { return json.Marshal(o) }}, {"appender", marshalOutcome}} {
		b.Run(enc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := enc.fn(out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzUnmarshalOutcome: unmarshalOutcome decodes what json.Unmarshal
// decodes, and fails where it fails, on an outcome json.Marshal wrote
// (drawn from data) and on data itself.
func FuzzUnmarshalOutcome(f *testing.F) {
	jsonw.AddSeeds(f)
	f.Add([]byte(`{"v":3,"result":"a\u003cb","usage":{"input_tokens":1,"output_tokens":-2,"estimated":true},"pid":7,"journal":[{"a":1},[]],"events":[]}`))
	f.Add([]byte(`{"v":3,"usage":{"output_tokens":2,"input_tokens":1},"journal":[null]}`))
	f.Add([]byte(`{"mac":"00ff","v":3,"usage":{"input_tokens":1,"output_tokens":2},"model":"m"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := jsonw.CompareDecode(data, unmarshalOutcome); err != nil {
			t.Fatal(err)
		}
	})
}

// TestDecodeOutcome: an outcome as a worker commits it is decoded without
// json.Unmarshal (unmarshalOutcome's fast path is taken, not only right).
func TestDecodeOutcome(t *testing.T) {
	var out Outcome
	jsonw.Fill(&out)
	out.Items, out.Observations = nil, nil
	out.Log = []json.RawMessage{json.RawMessage(`{"seq":1,"text":"x\u003cy"}`)}
	out.Events = []json.RawMessage{json.RawMessage(`[1,"é",true]`)}
	data, err := marshalOutcome(&out)
	if err != nil {
		t.Fatal(err)
	}
	data = signOutcome(data, "outcome key", "run.task.1")
	var got, want Outcome
	if !decodeOutcome(data, &got) {
		t.Fatalf("decodeOutcome refused %s", data)
	}
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeOutcome(%s)\n got %#v\nwant %#v", data, got, want)
	}
}
