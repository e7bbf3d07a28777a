package natsboard

import (
	"bytes"
	"errors"
	"fmt"
	neturl "net/url"
	"strconv"
	"strings"

	"github.com/fsdrun/fsd/diag"
	"github.com/fsdrun/fsd/spec"
)

// URLProblem says what is wrong with a comma-separated NATS URL list
// (board.nats, --nats) before anything dials it: the NATS client would
// take any scheme, wait for a NATS greeting from a web server, and find a
// port out of range only when dialling. It returns the element at fault
// (as written: callers that print it hide its credentials) and the
// problem, which never quotes the URL; both empty when the list is fine.
func URLProblem(list string) (bad, problem string) {
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		full := p
		if !strings.Contains(full, "://") {
			full = "nats://" + full // the client's default
		}
		u, err := neturl.Parse(full)
		if err != nil {
			var ue *neturl.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return p, err.Error()
		}
		switch u.Scheme {
		case "nats", "tls", "ws", "wss":
		default:
			return p, fmt.Sprintf("want nats://HOST:PORT (or tls://, ws://, wss://), not %s://", u.Scheme)
		}
		if u.Hostname() == "" {
			return p, "no host"
		}
		if port := u.Port(); port != "" {
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				return p, fmt.Sprintf("port %s is out of range (1-65535)", port)
			}
		}
	}
	return "", ""
}

// CheckWorkflow is the spec.WorkflowCheck of the workflow's board.nats:
// a URL list fsd run would refuse is reported at its line. The
// diagnostic names the list element by its place, not by its text, which
// may carry a password (the position shows it to whoever has the file).
func CheckWorkflow(w *spec.Workflow) diag.List {
	if w == nil || w.Board == nil || w.Board.NATS == "" {
		return nil // absent; or empty, which the schema refuses
	}
	list := w.Board.NATS
	bad, problem := URLProblem(list)
	if problem == "" {
		return nil
	}
	at := ""
	if parts := strings.Split(list, ","); len(parts) > 1 {
		for i, p := range parts {
			if strings.TrimSpace(p) == bad {
				at = fmt.Sprintf(" URL %d of %d:", i+1, len(parts))
				break
			}
		}
	}
	return diag.List{diag.Errorf(w.Board.At("nats"), "value", "board.nats:%s %s", at, problem)}
}

// Redacted stands for the user, password or token of a URL that
// RedactURL dropped.
const Redacted = "REDACTED"

// RedactURL drops the user, password or token of every URL of a
// comma-separated NATS URL list, for errors, logs and run records: a
// NATS credential is a secret like a model's API key.
//
// S5: a NATS credential is a secret.
func RedactURL(u string) string {
	var parts []string
	for _, p := range strings.Split(u, ",") {
		if at := strings.LastIndex(p, "@"); at >= 0 {
			scheme := ""
			if i := strings.Index(p, "://"); i >= 0 && i < at {
				scheme = p[:i+3]
			}
			p = scheme + Redacted + "@" + p[at+1:]
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ",")
}

// URLSecrets returns the passwords and tokens of a comma-separated NATS
// URL list, as written and unescaped: what a run masks in the text it
// records and sends, as it masks a model's API key.
func URLSecrets(list string) []string {
	var out []string
	for _, p := range strings.Split(list, ",") {
		at := strings.LastIndex(p, "@")
		if at < 0 {
			continue
		}
		info := p[:at]
		if i := strings.Index(info, "://"); i >= 0 {
			info = info[i+3:]
		}
		if _, pass, ok := strings.Cut(info, ":"); ok {
			info = pass // a user name is not a secret
		}
		out = append(out, info)
		if u, err := neturl.PathUnescape(info); err == nil && u != info {
			out = append(out, u)
		}
	}
	return out
}

// Redact is a runrecord.Redact for board.nats: the run record
// keeps the workflow with every URL of board.nats redacted, and the
// workflow's file with each URL that carries a user, password or token
// replaced by its redacted form where the text spells it out. src comes
// back nil — no copy of the file — when one is not spelled out (written
// with YAML escapes, folded) or its secret is still in the text after
// that.
func Redact(wf *spec.Workflow, src []byte) (*spec.Workflow, []byte) {
	b := wf.Board
	if b == nil || b.NATS == RedactURL(b.NATS) {
		return wf, src
	}
	w, board := *wf, *b
	board.NATS = RedactURL(b.NATS)
	w.Board = &board
	src, ok := withoutCredentials(src, b.NATS)
	if !ok {
		src = nil
	}
	return &w, src
}

// withoutCredentials replaces each URL of list that carries a user,
// password or token with the URL without them in src; ok is false when
// one is not spelled out in src or its secret is still there after that.
func withoutCredentials(src []byte, list string) (out []byte, ok bool) {
	if src == nil {
		return nil, true
	}
	for _, u := range strings.Split(list, ",") {
		u = strings.TrimSpace(u)
		r := RedactURL(u)
		if r == u {
			continue
		}
		if !bytes.Contains(src, []byte(u)) {
			return nil, false
		}
		src = bytes.ReplaceAll(src, []byte(u), []byte(r))
		// The secret: the password of user:password, else the token.
		secret := u[:strings.LastIndex(u, "@")]
		if i := strings.Index(secret, "://"); i >= 0 {
			secret = secret[i+3:]
		}
		if i := strings.Index(secret, ":"); i >= 0 {
			secret = secret[i+1:]
		}
		if secret != "" && bytes.Contains(src, []byte(secret)) {
			return nil, false
		}
	}
	return src, true
}
