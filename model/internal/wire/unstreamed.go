package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/retry"
)

// maxHead is how much of a reply that is no answer an error quotes: enough
// to tell an HTML login page from a proxy's JSON.
const maxHead = 200

// readStream reads the answer to a streaming request. A reply that is not
// an event stream is read for what it is: providers, OpenAI-compatible
// servers and proxies may ignore "stream" and send a whole answer, or
// send an error as a JSON body under a success status. Read as events,
// either holds none, looks cut short, and would be asked for again, with
// the same result, until the retries run out.
func (c *Client) readStream(r *http.Response, onText func(string)) (*model.Response, error) {
	ct := r.Header.Get("Content-Type")
	if mt, _, _ := mime.ParseMediaType(ct); mt == "text/event-stream" {
		return c.format.Stream(NewSSE(c.provider, r.Body), onText)
	}
	br := bufio.NewReader(r.Body)
	isJSON, err := opensObject(br)
	if err != nil {
		return nil, err
	}
	if isJSON {
		return c.unstreamed(r, br, onText)
	}
	// Anything else may still be events under another label, and is read
	// as events as they come; only a reply without a single one is refused.
	head := &headReader{r: br, max: maxErrorBody}
	events := NewSSE(c.provider, head)
	resp, err := c.format.Stream(events, onText)
	var tr *retry.TruncatedError
	if errors.As(err, &tr) && events.events == 0 {
		return nil, c.notAnAnswer(ct, head.b, nil)
	}
	return resp, err
}

// unstreamed reads a JSON reply to a streaming request. An error body is
// that error. Anything else is read as a whole answer, whose text goes to
// onText at once.
func (c *Client) unstreamed(r *http.Response, body io.Reader, onText func(string)) (*model.Response, error) {
	raw, err := readWhole(c.provider, body)
	if err != nil {
		return nil, err
	}
	if e, ok := envelope(raw); ok {
		return nil, &retry.StatusError{
			Provider:   c.provider,
			Status:     errorStatus(e, r.StatusCode),
			Message:    Clip("error instead of a stream: " + e.Message),
			RetryAfter: retryAfter(r.Header, raw),
		}
	}
	ct := r.Header.Get("Content-Type")
	if c.format.Whole == nil {
		return nil, c.notAnAnswer(ct, raw, nil)
	}
	resp, err := c.format.Whole(bytes.NewReader(raw))
	if err != nil {
		return nil, c.notAnAnswer(ct, raw, err)
	}
	if resp.Text != "" {
		onText(resp.Text)
	}
	return resp, nil
}

// errorStatus is the status an error body sent under status stands for.
// A rate limit or an overload is retried as its own status would be. Any
// other error sent with a success status is the server's answer to this
// request, which asking again would only repeat: it keeps status, which
// is not retried.
func errorStatus(e apiError, status int) int {
	kind := strings.ToLower(e.Type + " " + fmt.Sprint(e.Code) + " " + e.Status)
	switch {
	case strings.Contains(kind, "rate_limit"), strings.Contains(kind, "resource_exhausted"):
		return http.StatusTooManyRequests
	case strings.Contains(kind, "overloaded"):
		return 529 // Anthropic's "overloaded"
	case strings.Contains(kind, "unavailable"):
		return http.StatusServiceUnavailable // Google's overloaded model
	}
	return status
}

// notAnAnswer is the error for a reply to a streaming request that is
// neither events nor an answer the provider's format reads (cause says
// why not, when it was tried). Asking again would get the same reply, so
// it is not retried; it quotes the reply's start so that the server or
// proxy in the way can be told.
func (c *Client) notAnAnswer(contentType string, body []byte, cause error) error {
	what := "no Content-Type"
	if contentType != "" {
		what = "Content-Type " + contentType
	}
	msg := fmt.Sprintf("%s: the server answered a streaming request with %s, not an event stream", c.provider, what)
	if cause != nil {
		msg += fmt.Sprintf(", and not a whole answer either (%v)", cause)
	}
	msg += fmt.Sprintf("; the reply begins %q", c.begins(body))
	return retry.Permanent(errors.New(msg))
}

// begins is the start of body for an error message, with the key masked.
// The cut at maxHead is moved past any occurrence of a secret it would
// split, so that no part of one is left unmasked.
func (c *Client) begins(body []byte) string {
	n := min(len(body), maxHead)
	for moved := true; moved; {
		moved = false
		for _, v := range c.secrets.Values() {
			from := max(0, n-len(v)+1)
			window := body[from:min(len(body), n+len(v)-1)]
			if i := bytes.Index(window, []byte(v)); i >= 0 && from+i < n {
				n = from + i + len(v)
				moved = true
			}
		}
	}
	return Clip(strings.ToValidUTF8(c.secrets.String(string(body[:n])), "\uFFFD"))
}

// opensObject reports whether br's first byte past white space opens a
// JSON object, without consuming it. A read error other than the end of
// the body is returned: the reply was cut, and is asked for again.
func opensObject(br *bufio.Reader) (bool, error) {
	for i := 1; ; i++ {
		b, err := br.Peek(i)
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, bufio.ErrBufferFull):
			return false, nil
		case err != nil:
			return false, err
		}
		switch b[i-1] {
		case ' ', '\t', '\r', '\n':
		default:
			return b[i-1] == '{', nil
		}
	}
}

// headReader keeps the first max bytes read through it.
type headReader struct {
	r   io.Reader
	b   []byte
	max int
}

func (h *headReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if keep := min(n, h.max-len(h.b)); keep > 0 {
		h.b = append(h.b, p[:keep]...)
	}
	return n, err
}
