package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/fsdrun/fsd/model"
)

// Event is one server-sent event.
type Event struct {
	Name string // the event: field; "" when absent
	Data []byte // data: lines joined by "\n"
}

// SSE reads server-sent events (the text/event-stream format: fields, one
// a line, events separated by a blank line; lines starting with ":" are
// comments).
type SSE struct {
	r        *bufio.Reader
	provider string
	line     []byte
	events   int // events returned so far
}

// NewSSE reads events from r.
func NewSSE(provider string, r io.Reader) *SSE {
	return &SSE{r: bufio.NewReaderSize(&lineEnds{r: r}, 32<<10), provider: provider}
}

// lineEnds reads r with every line end the format allows (CRLF, LF, or a
// CR alone) made LF, so that readLine needs to look for LF only. A stream
// whose lines end in CR alone was otherwise one line without end, read as
// a cut stream and asked for again until the retries ran out.
type lineEnds struct {
	r  io.Reader
	cr bool // the last byte read was a CR, its LF (if any) still to come
}

func (l *lineEnds) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	w := 0
	for _, b := range p[:n] {
		if l.cr {
			l.cr = false
			if b == '\n' {
				continue // CRLF: the LF was written for the CR
			}
		}
		if b == '\r' {
			b, l.cr = '\n', true
		}
		p[w] = b
		w++
	}
	return w, err
}

// Next returns the next event. At the end of the stream it returns io.EOF;
// an event left incomplete at the end is dropped, as the format says (the
// caller notices that the stream did not finish). A read error is returned
// as is, so a connection cut mid-stream is a retryable network error.
func (s *SSE) Next() (Event, error) {
	var ev Event
	have := false
	for {
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return Event{}, io.EOF
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if have {
				s.events++
				return ev, nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.Name = string(value)
			have = true
		case "data":
			if ev.Data == nil {
				ev.Data = make([]byte, 0, len(value))
			} else {
				ev.Data = append(ev.Data, '\n')
			}
			ev.Data = append(ev.Data, value...)
			have = true
		}
	}
}

// readLine returns one line without its end (lineEnds made it \n). A line
// longer than the answer cap is an error, not an allocation without end.
func (s *SSE) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		frag, err := s.r.ReadSlice('\n')
		s.line = append(s.line, frag...)
		if len(s.line) > model.MaxResponseBytes {
			return nil, TooLarge(s.provider)
		}
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) && len(s.line) > 0 {
			// A last line without its newline: the event it belongs to
			// cannot have ended (that needs a blank line), so it is dropped.
			return nil, io.EOF
		}
		return nil, err
	}
	return bytes.TrimSuffix(s.line, []byte("\n")), nil
}
