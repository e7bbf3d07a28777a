package event

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/fsdrun/fsd/internal/jsonw"
	"github.com/fsdrun/fsd/model"
)

// eventsToDecode are the events a remote task sends most, and one with
// every field Unmarshal reads set.
func eventsToDecode() []Event {
	now := time.Date(2026, 12, 2, 2, 17, 52, 349685420, time.UTC)
	var full Event
	jsonw.Fill(&full)
	full.Attempts = nil // left to json.Unmarshal
	return []Event{
		full,
		{Type: TaskStarted, Time: now, Run: "r1", Task: "t2", Agent: "fan/worker", Goal: "do t2"},
		{Type: Request, Time: now, Run: "r1", Task: "t2", Tokens: &Tokens{Context: 2, Window: 8, Total: 10}, Messages: 1,
			Usage: &model.Usage{InputTokens: 10, OutputTokens: 3, Estimated: true}},
		{Type: Text, Time: now, Run: "r1", Task: "t2", Text: "line one\nline <two> & \"three\"", Delta: true},
		{Type: ToolCall, Time: now, Run: "r1", Tool: "fetch", CallID: "c1", Args: json.RawMessage(`{"path":"a<b"}`)},
		{Type: ToolProgress, Time: now.In(time.FixedZone("x", 3600)), Run: "r1", Tool: "fetch", Progress: &Progress{Done: 3, Total: 5}, Worker: &Worker{Name: "w", PID: 7}},
		{Type: TaskCompleted, Time: now, Run: "r1", Task: "t2", Output: json.RawMessage(`[1,2]`), Elapsed: 15.444, Cost: 1e-7, Deps: []string{}},
	}
}

// TestUnmarshal: an event as AppendJSON writes it is decoded without
// json.Unmarshal (the fast path is taken, not only right: a field added
// to Event and not to Unmarshal fails here), into what json.Unmarshal
// gives.
func TestUnmarshal(t *testing.T) {
	for _, e := range eventsToDecode() {
		data, err := e.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		var got, want Event
		if end, ok := jsonw.Object(data, 0, eventKeys, func(k, i int) (int, bool) { return readEventField(data, i, k, &got) }); !ok || end != len(data) {
			t.Errorf("Unmarshal leaves %s to json.Unmarshal", data)
		}
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Unmarshal(%s)\n got %#v\nwant %#v", data, got, want)
		}
	}
}

// FuzzUnmarshal: Unmarshal decodes what json.Unmarshal decodes, and fails
// where it fails, on an event json.Marshal wrote (drawn from data) and on
// data itself.
func FuzzUnmarshal(f *testing.F) {
	jsonw.AddSeeds(f)
	for _, e := range eventsToDecode() {
		data, _ := e.AppendJSON(nil)
		f.Add(data)
	}
	f.Add([]byte(`{"type":"text","time":"2026-12-02T02:17:52Z","run":"r","text":"a","Text":"b"}`))
	f.Add([]byte(`{"type":"x","time":"2026-12-02T02:17:52+01:00","run":"r","usage":{"output_tokens":1,"input_tokens":2},"worker":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := jsonw.CompareDecode(data, Unmarshal); err != nil {
			t.Fatal(err)
		}
	})
}

func BenchmarkUnmarshal(b *testing.B) {
	e := Event{Type: TaskCompleted, Time: time.Now(), Run: "20261202-021752-50650c13", Task: "t2", Agent: "fan/worker",
		Result: "done t2", Usage: &model.Usage{InputTokens: 10, OutputTokens: 3, Estimated: true}, Elapsed: 15.444}
	data, _ := e.AppendJSON(nil)
	b.Run("Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var e Event
			if err := Unmarshal(data, &e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var e Event
			if err := json.Unmarshal(data, &e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
