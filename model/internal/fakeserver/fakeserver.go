package fakeserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// Reply is one scripted answer.
type Reply struct {
	Status  int               // 0 means 200
	Header  map[string]string // extra headers
	Body    string
	Chunked bool // write Body in 1-7 byte flushed chunks
	// Stall holds the request open until the client gives up.
	Stall bool
	// Abort drops the connection after Body, without ending the response:
	// a connection cut mid-answer.
	Abort bool
}

// Request is what the server received.
type Request struct {
	Method, Path string
	Query        string // the URL's raw query
	Header       http.Header
	Body         []byte
}

// Server is a scripted HTTP server.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	replies  []Reply
	requests []Request
	stop     chan struct{}
}

// New starts a server that answers with replies in order; past the end it
// answers 500 so a test never hangs on a missing reply.
func New(replies ...Reply) *Server {
	s := &Server{replies: replies, stop: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Close stops stalled handlers, then the server.
func (s *Server) Close() {
	close(s.stop)
	s.Server.Close()
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
	reply := Reply{Status: 500, Body: `{"error":{"message":"fakeserver: no reply scripted"}}`}
	if n < len(s.replies) {
		reply = s.replies[n]
	}
	s.mu.Unlock()

	if reply.Stall {
		select {
		case <-r.Context().Done():
		case <-s.stop:
		}
		return
	}
	for k, v := range reply.Header {
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	status := reply.Status
	if status == 0 {
		status = 200
	}
	w.WriteHeader(status)
	if reply.Abort {
		// The status line and body so far reach the client; then the
		// handler aborts, which closes the connection mid-response.
		_, _ = io.WriteString(w, reply.Body)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		panic(http.ErrAbortHandler)
	}
	if !reply.Chunked {
		_, _ = io.WriteString(w, reply.Body)
		return
	}
	f, _ := w.(http.Flusher)
	b := []byte(reply.Body)
	for i, size := 0, 1; i < len(b); size = size%7 + 1 {
		end := min(i+size, len(b))
		if _, err := w.Write(b[i:end]); err != nil {
			return
		}
		if f != nil {
			f.Flush()
		}
		i = end
		// A pause now and then makes the client really read partial
		// events rather than one coalesced buffer.
		if i%29 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
}
