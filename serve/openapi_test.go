package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/serve"
)

// openapiDoc compiles response schemas out of the served document.
type openapiDoc struct {
	c   *jsonschema.Compiler
	doc map[string]any
}

func loadOpenAPI(t *testing.T, body []byte) *openapiDoc {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("/openapi.json is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("https://fsd.invalid/openapi.json", inst); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	_ = json.Unmarshal(body, &doc)
	if doc["openapi"] != "3.1.0" {
		t.Errorf("openapi = %v, want 3.1.0", doc["openapi"])
	}
	return &openapiDoc{c: c, doc: doc}
}

// check validates a response against the document's schema for path
// (its template), method and the response's status; a status the
// document does not list fails.
func (d *openapiDoc) check(t *testing.T, method, path string, resp *http.Response) {
	t.Helper()
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	code := strconv.Itoa(resp.StatusCode)
	op, _ := d.doc["paths"].(map[string]any)[path].(map[string]any)[strings.ToLower(method)].(map[string]any)
	if op == nil {
		t.Fatalf("%s %s is not in the document", method, path)
	}
	r, _ := op["responses"].(map[string]any)[code].(map[string]any)
	if r == nil {
		t.Fatalf("%s %s answered %s, which the document does not list: %s", method, path, code, body)
	}
	content, _ := r["content"].(map[string]any)
	if content == nil {
		if len(body) != 0 {
			t.Errorf("%s %s %s: a body the document does not describe: %s", method, path, code, body)
		}
		return
	}
	if _, ok := content["application/json"]; !ok {
		return // the event stream: its events are checked below
	}
	esc := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1") }
	loc := "https://fsd.invalid/openapi.json#/paths/" + esc(path) + "/" + strings.ToLower(method) + "/responses/" + code + "/content/application~1json/schema"
	d.validate(t, loc, body, method+" "+path+" "+code)
}

func (d *openapiDoc) validate(t *testing.T, loc string, body []byte, what string) {
	t.Helper()
	sch, err := d.c.Compile(loc)
	if err != nil {
		t.Fatalf("%s: compile %s: %v", what, loc, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%s: not JSON: %s", what, body)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("%s: the response breaks the document: %v\n%s", what, err, body)
	}
}

func do(t *testing.T, method, url, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// Y5: every response of the API — successes and errors — is what
// /openapi.json says, and so is every event of a stream.
func TestResponsesFollowOpenAPI(t *testing.T) {
	p, dir := project(t)
	gate := make(chan struct{})
	m := &steps{next: []func(context.Context) (*model.Response, error){
		call("read_skill", `{"id":"aa"}`),
		wait(gate, call("risky", `{}`)),
		say("done"),
	}}
	srv, hs := newServer(t, p, dir, m)
	resp := do(t, "GET", hs.URL+"/openapi.json", "")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(b, serve.OpenAPI()) {
		t.Fatal("/openapi.json is not the embedded document")
	}
	d := loadOpenAPI(t, b)
	u := hs.URL
	d.check(t, "GET", "/sessions", do(t, "GET", u+"/sessions", ""))
	d.check(t, "POST", "/sessions", do(t, "POST", u+"/sessions", `{"id":"empty"}`))
	d.check(t, "POST", "/sessions", do(t, "POST", u+"/sessions", `{"id":"empty"}`))    // 409
	d.check(t, "POST", "/sessions", do(t, "POST", u+"/sessions", `{"id":"../x"}`))     // 400
	d.check(t, "POST", "/sessions", do(t, "POST", u+"/sessions", `{"nonsense":true}`)) // 400
	d.check(t, "POST", "/sessions", do(t, "POST", u+"/sessions", `{"id":"s","message":"go"}`))
	d.check(t, "GET", "/sessions/{id}", do(t, "GET", u+"/sessions/s", ""))
	d.check(t, "GET", "/sessions/{id}", do(t, "GET", u+"/sessions/nope", ""))                                     // 404
	d.check(t, "POST", "/sessions/{id}/messages", do(t, "POST", u+"/sessions/s/messages", `{"message":"again"}`)) // 409
	d.check(t, "POST", "/sessions/{id}/messages", do(t, "POST", u+"/sessions/s/messages", `{}`))                  // 400
	d.check(t, "GET", "/sessions/{id}/turns/{n}", do(t, "GET", u+"/sessions/s/turns/1", ""))
	d.check(t, "GET", "/sessions/{id}/turns/{n}", do(t, "GET", u+"/sessions/s/turns/9", "")) // 404
	events, stop := stream(t, u, "s", -1)
	defer stop()
	close(gate)
	var call string
	for e := range events {
		if e.name == "end" {
			break
		}
		d.validate(t, "https://fsd.invalid/openapi.json#/components/schemas/Event", []byte(e.data), "event "+e.name)
		if e.name == "approval.requested" {
			var ev struct {
				Approval string `json:"approval"`
			}
			_ = json.Unmarshal([]byte(e.data), &ev)
			call = ev.Approval
			d.check(t, "GET", "/sessions/{id}/approvals", do(t, "GET", u+"/sessions/s/approvals", ""))
			d.check(t, "GET", "/sessions/{id}", do(t, "GET", u+"/sessions/s", ""))
			d.check(t, "POST", "/sessions/{id}/approvals/{call}", do(t, "POST", u+"/sessions/s/approvals/"+call, `{"decision":"perhaps"}`)) // 400
			d.check(t, "POST", "/sessions/{id}/approvals/{call}", do(t, "POST", u+"/sessions/s/approvals/"+call, `{"decision":"approve"}`))
			d.check(t, "POST", "/sessions/{id}/approvals/{call}", do(t, "POST", u+"/sessions/s/approvals/"+call, `{"decision":"approve"}`)) // 404
		}
	}
	if call == "" {
		t.Fatal("no approval was asked")
	}
	if err := srv.Wait(context.Background(), "s"); err != nil {
		t.Fatal(err)
	}
	d.check(t, "POST", "/sessions/{id}/cancel", do(t, "POST", u+"/sessions/s/cancel", "")) // 404: no turn runs
	d.check(t, "POST", "/sessions/{id}/resume", do(t, "POST", u+"/sessions/s/resume", "")) // 400: not interrupted
	d.check(t, "POST", "/sessions/{id}/abandon", do(t, "POST", u+"/sessions/s/abandon", ""))
	d.check(t, "GET", "/sessions/{id}/events", do(t, "GET", u+"/sessions/s/events", "")) // the stream
	d.check(t, "GET", "/sessions/{id}/events", do(t, "GET", u+"/sessions/s/events?after=x", ""))
	d.check(t, "GET", "/sessions", do(t, "GET", u+"/sessions", ""))
}
