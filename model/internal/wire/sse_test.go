package wire

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/model"
)

func readAll(t *testing.T, in string) ([]Event, error) {
	t.Helper()
	s := NewSSE("p", strings.NewReader(in))
	var out []Event
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestSSE(t *testing.T) {
	tests := []struct {
		name, in string
		want     []Event
	}{
		{"data only", "data: a\n\ndata: b\n\n", []Event{{Data: []byte("a")}, {Data: []byte("b")}}},
		{"named", "event: ping\ndata: {}\n\n", []Event{{Name: "ping", Data: []byte("{}")}}},
		{"CRLF and comments", ": keep-alive\r\ndata: x\r\n\r\n", []Event{{Data: []byte("x")}}},
		{"multi-line data", "data: a\ndata: b\n\n", []Event{{Data: []byte("a\nb")}}},
		{"no space after colon", "data:x\n\n", []Event{{Data: []byte("x")}}},
		{"empty data kept", "data:\n\n", []Event{{Data: []byte{}}}},
		{"blank lines between", "\n\n\ndata: a\n\n\n", []Event{{Data: []byte("a")}}},
		{"unfinished last event dropped", "data: a\n\ndata: b\n", []Event{{Data: []byte("a")}}},
		{"last line without newline dropped", "data: a\n\ndata: b", []Event{{Data: []byte("a")}}},
		{"unknown fields ignored", "id: 3\nretry: 10\ndata: a\n\n", []Event{{Data: []byte("a")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAll(t, tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSSELineCap(t *testing.T) {
	_, err := readAll(t, "data: "+strings.Repeat("x", model.MaxResponseBytes+1)+"\n\n")
	if err == nil || !strings.Contains(err.Error(), "8 MiB limit") {
		t.Fatalf("err = %v, want the answer cap", err)
	}
}

// A read error (a dropped connection) is returned as is, so the retry
// policy sees a network error.
func TestSSEReadError(t *testing.T) {
	s := NewSSE("p", io.MultiReader(strings.NewReader("data: a\n\ndata: b"), errReader{}))
	if _, err := s.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

// FuzzSSE: any byte stream yields events or an error, never a panic, and
// every event's data came from a data line.
func FuzzSSE(f *testing.F) {
	for _, s := range []string{"data: a\n\n", "event: x\r\ndata: {}\r\n\r\n", ":c\n\ndata", "data: a\ndata: b\n\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		evs, _ := readAll(t, in)
		for _, ev := range evs {
			if len(ev.Data) > len(in) {
				t.Fatalf("event data %q longer than the input %q", ev.Data, in)
			}
		}
	})
}

// TestSSECarriageReturns: the format ends a line with CRLF, LF or a CR
// alone. A stream whose lines end in CR alone was one unending line, read
// as a stream cut short and asked for again until the retries ran out.
// A CR at the end of one read and the LF at the start of the next are one
// line end.
func TestSSECarriageReturns(t *testing.T) {
	want := []Event{{Data: []byte("a")}, {Name: "e", Data: []byte("b\nc")}}
	for _, in := range []string{
		"data: a\r\revent: e\rdata: b\rdata: c\r\r",
		"data: a\r\n\revent: e\r\ndata: b\rdata: c\n\r\n",
		"data: a\r\r\n\r\nevent: e\r\ndata: b\r\ndata: c\r\r\n",
	} {
		for _, oneByte := range []bool{false, true} {
			var r io.Reader = strings.NewReader(in)
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			s := NewSSE("p", r)
			var got []Event
			for {
				ev, err := s.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ev)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%q (one byte a read: %v): events (-want +got):\n%s", in, oneByte, diff)
			}
		}
	}
}
