package serve

import (
	"bytes"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/runrecord"
)

//go:embed openapi.json
var openapi []byte

// OpenAPI is the OpenAPI 3.1 document of the REST API and the event
// stream, as served at /openapi.json.
func OpenAPI() []byte { return openapi }

// Mounts are the handlers a Server's Handler serves beside its own API:
// the protocol adapters and the web view. Nil ones are left out.
type Mounts struct {
	// AGUI serves POST /agui.
	AGUI http.Handler
	// A2A serves /.well-known/agent-card.json and the A2A endpoint, /a2a.
	A2A http.Handler
	// Web serves every other path: the web view's pages.
	Web http.Handler
}

// Handler routes the REST API, the event streams, /openapi.json and m.
// It does not guard: the caller puts it behind the Host, Origin, token
// and body checks (internal/httpguard).
//
// Y5: /openapi.json describes every route here.
func (s *Server) Handler(m Mounts) http.Handler {
	// The API's routes sit on a mux of their own: on the outer one the web
	// view's "/" would answer a wrong method on /sessions (PUT, DELETE) or
	// an unknown route under it with its "404 page not found".
	api := http.NewServeMux()
	api.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openapi)
	})
	api.HandleFunc("GET /sessions", s.listSessions)
	api.HandleFunc("POST /sessions", s.createSession)
	api.HandleFunc("GET /sessions/{id}", s.getSession)
	api.HandleFunc("POST /sessions/{id}/messages", s.postMessage)
	api.HandleFunc("GET /sessions/{id}/turns/{n}", s.getTurn)
	api.HandleFunc("POST /sessions/{id}/cancel", s.cancel)
	api.HandleFunc("POST /sessions/{id}/resume", s.resume)
	api.HandleFunc("POST /sessions/{id}/abandon", s.abandon)
	api.HandleFunc("GET /sessions/{id}/approvals", s.listApprovals)
	api.HandleFunc("POST /sessions/{id}/approvals/{call...}", s.answer)
	api.HandleFunc("GET /sessions/{id}/events", s.events)
	mux := http.NewServeMux()
	for _, p := range []string{"/openapi.json", "/sessions", "/sessions/"} {
		mux.Handle(p, apiErrors(api))
	}
	if m.AGUI != nil {
		mux.Handle("/agui", m.AGUI)
	}
	if m.A2A != nil {
		mux.Handle("/.well-known/agent-card.json", m.A2A)
		mux.Handle("/a2a", m.A2A)
		mux.Handle("/a2a/", m.A2A)
	}
	if m.Web != nil {
		mux.Handle("/", m.Web)
	}
	return mux
}

// apiErrors answers what api's own routing refuses — a wrong method
// (405, with Allow) or no such route (404) — as the API's JSON errors.
func apiErrors(api *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := api.Handler(r)
		if pattern != "" {
			api.ServeHTTP(w, r) // it sets the request's path values; h alone does not
			return
		}
		// The mux's own answer says which of the two it is, and sets Allow.
		got := &routeRefusal{header: w.Header()}
		h.ServeHTTP(got, r)
		if got.code == http.StatusMethodNotAllowed {
			writeJSON(w, got.code, errorJSON{Error: fmt.Sprintf("method %s: %s takes %s", r.Method, r.URL.Path, w.Header().Get("Allow"))})
			return
		}
		writeJSON(w, http.StatusNotFound, errorJSON{Error: fmt.Sprintf("no route %s %s (the API is described at /openapi.json)", r.Method, r.URL.Path)})
	})
}

// routeRefusal keeps the status and headers of a mux's refusal and drops
// its text/plain body.
type routeRefusal struct {
	header http.Header
	code   int
}

func (x *routeRefusal) Header() http.Header         { return x.header }
func (x *routeRefusal) Write(b []byte) (int, error) { return len(b), nil }
func (x *routeRefusal) WriteHeader(code int)        { x.code = code }

// The JSON the API speaks (openapi.json's schemas).
type (
	sessionJSON struct {
		ID      string    `json:"id"`
		Status  string    `json:"status"`
		Turns   int       `json:"turns"`
		Started time.Time `json:"started,omitzero"`
		Pending int       `json:"pending"`
	}
	turnJSON struct {
		Session  string    `json:"session"`
		Turn     int       `json:"turn"`
		RunID    string    `json:"run_id"`
		Status   string    `json:"status,omitempty"`
		Input    string    `json:"input,omitempty"`
		Started  time.Time `json:"started,omitzero"`
		Finished time.Time `json:"finished,omitzero"`
	}
	approvalJSON struct {
		CallID string          `json:"call_id"`
		Tool   string          `json:"tool"`
		Agent  string          `json:"agent,omitempty"`
		Args   json.RawMessage `json:"args,omitempty"`
	}
	answerJSON struct {
		Decision string          `json:"decision"`
		Args     json.RawMessage `json:"args,omitempty"`
		Reason   string          `json:"reason,omitempty"`
	}
	errorJSON struct {
		Error string `json:"error"`
	}
)

func sessionOf(i SessionInfo) sessionJSON {
	return sessionJSON{ID: i.Name, Status: i.Status, Turns: i.Turns, Started: i.Started, Pending: i.Pending}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// writeErr answers err with the status its kind says.
func writeErr(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		code = http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrInvalid):
		code = http.StatusBadRequest
	case errors.Is(err, ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, ErrBusy), errors.Is(err, ErrInterrupted), errors.Is(err, errExists):
		code = http.StatusConflict
	case errors.Is(err, ErrClosed):
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, errorJSON{Error: err.Error()})
}

// errExists: a session to create is there already (busy or not).
var errExists = errors.New("the session exists")

// decode reads a JSON body into v; an empty body leaves v as it is.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	var raw json.RawMessage
	err := dec.Decode(&raw)
	if err == nil {
		// Whatever followed the object would be dropped unread.
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: body: one JSON object, with nothing after it", ErrInvalid)
		}
		// null would decode as nothing at all, and pass for an empty body.
		if string(raw) == "null" {
			return fmt.Errorf("%w: body: want a JSON object (got null)", ErrInvalid)
		}
		dec = json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err = dec.Decode(v); err == nil {
			return nil
		}
	}
	var tooBig *http.MaxBytesError
	var wrong *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case errors.As(err, &tooBig):
		return err
	case errors.As(err, &wrong) && wrong.Field != "":
		return fmt.Errorf("%w: body: %s: want %s (got %s)", ErrInvalid, wrong.Field, wrong.Type.Kind(), wrong.Value)
	case errors.As(err, &wrong):
		return fmt.Errorf("%w: body: want a JSON object (got %s)", ErrInvalid, wrong.Value)
	}
	return fmt.Errorf("%w: body: %v", ErrInvalid, err)
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	list, err := s.Sessions()
	if err != nil {
		writeErr(w, err)
		return
	}
	out := make([]sessionJSON, 0, len(list))
	for _, i := range list {
		out = append(out, sessionOf(i))
	}
	writeJSON(w, http.StatusOK, out)
}

// createSession makes a session (named by the body's id, else a fresh
// name) and, given a message, starts its first turn.
func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ID      string `json:"id"`
		Message string `json:"message"`
	}
	if err := decode(r, &body); err != nil {
		writeErr(w, err)
		return
	}
	if body.ID == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		body.ID = time.Now().UTC().Format("20060102-150405-") + hex.EncodeToString(b[:])
	}
	if err := runrecord.CheckSessionName(body.ID); err != nil {
		writeErr(w, fmt.Errorf("%w: %v", ErrInvalid, err))
		return
	}
	if s.exists(body.ID) {
		writeErr(w, fmt.Errorf("%w: session %s exists; post its next message to /sessions/%s/messages", errExists, body.ID, body.ID))
		return
	}
	if body.Message != "" {
		if _, err := s.Send(r.Context(), body.ID, body.Message); err != nil {
			writeErr(w, err)
			return
		}
	} else {
		sess, err := engine.OpenSession(s.cfg.SessionsDir, body.ID)
		if err != nil {
			writeErr(w, err)
			return
		}
		sess.Close()
	}
	info, err := s.Session(body.ID)
	if err != nil {
		writeErr(w, err)
		return
	}
	w.Header().Set("Location", "/sessions/"+body.ID)
	writeJSON(w, http.StatusCreated, sessionOf(info))
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	info, err := s.Session(r.PathValue("id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, sessionOf(info))
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Message string `json:"message"`
	}
	if err := decode(r, &body); err != nil {
		writeErr(w, err)
		return
	}
	ti, err := s.Send(r.Context(), r.PathValue("id"), body.Message)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, turnJSON{Session: ti.Session, Turn: ti.Turn, RunID: ti.RunID, Status: string(runrecord.Running)})
}

func (s *Server) getTurn(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	n, err := strconv.Atoi(r.PathValue("n"))
	if !s.exists(id) {
		writeErr(w, fmt.Errorf("%w: session %s", ErrNotFound, id))
		return
	}
	f, rerr := runrecord.ReadSession(s.dir(id))
	if rerr != nil && s.running(id) == nil {
		// Its turns cannot be read (the session is damaged): say so, not
		// that it has none.
		writeErr(w, rerr)
		return
	}
	if err != nil || n < 1 || n > len(f.Turns) {
		writeErr(w, fmt.Errorf("%w: session %s has no turn %s (it has %d)", ErrNotFound, id, r.PathValue("n"), len(f.Turns)))
		return
	}
	t := f.Turns[n-1]
	out := turnJSON{Session: id, Turn: n, RunID: id, Status: string(t.Status), Input: t.Input, Started: t.Started, Finished: t.Finished}
	if out.Status == "" {
		// Not over: running here, or interrupted.
		info, _ := s.Session(id)
		out.Status = info.Status
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	if err := s.Cancel(r.PathValue("id")); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

func (s *Server) resume(w http.ResponseWriter, r *http.Request) {
	ti, err := s.Resume(r.PathValue("id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, turnJSON{Session: ti.Session, Turn: ti.Turn, RunID: ti.RunID, Status: string(runrecord.Running)})
}

func (s *Server) abandon(w http.ResponseWriter, r *http.Request) {
	if err := s.Abandon(r.PathValue("id")); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	ps, err := s.Pending(r.PathValue("id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	out := make([]approvalJSON, 0, len(ps))
	for _, p := range ps {
		out = append(out, approvalJSON{CallID: p.CallID, Tool: p.Tool, Agent: p.Agent, Args: p.Args})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	var body answerJSON
	if err := decode(r, &body); err != nil {
		writeErr(w, err)
		return
	}
	err := s.Answer(r.PathValue("id"), r.PathValue("call"), Answer{Decision: body.Decision, Args: body.Args, Reason: body.Reason})
	if err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// events streams the session's events as Server-Sent Events: each with
// its id, its type as the event name and the event as JSON data, then
// "end" when the turn running at the request has ended (or at once after
// the record when none runs). A client reconnecting with Last-Event-ID
// (or ?after=ID) gets every event after that one, from the record.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	after := int64(0)
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("after")
	}
	if last != "" {
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil || n < 0 {
			writeErr(w, fmt.Errorf("%w: Last-Event-ID %q: want an event's id, a number", ErrInvalid, last))
			return
		}
		after = n
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		writeErr(w, errors.New("streaming unsupported"))
		return
	}
	ch, err := s.Events(r.Context(), r.PathValue("id"), after)
	if err != nil {
		writeErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	for e := range ch {
		b, err := json.Marshal(struct {
			ID   int64 `json:"id"`
			Turn int   `json:"turn"`
			event.Event
		}{e.ID, e.Turn, e.Event})
		if err != nil {
			continue
		}
		fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.ID, e.Type, b)
		fl.Flush()
	}
	if r.Context().Err() == nil {
		fmt.Fprint(w, "event: end\ndata: {}\n\n")
		fl.Flush()
	}
}
