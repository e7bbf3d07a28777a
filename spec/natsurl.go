package spec

import (
	"errors"
	"fmt"
	neturl "net/url"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v4"
)

// NATSURLProblem says what is wrong with a comma-separated NATS URL list
// (board.nats, --nats) before anything dials it: the NATS client would
// take any scheme, wait for a NATS greeting from a web server, and find a
// port out of range only when dialling. It returns the element at fault
// (as written: callers that print it hide its credentials) and the
// problem, which never quotes the URL; both empty when the list is fine.
func NATSURLProblem(list string) (bad, problem string) {
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

// checkNATSURL reports a board.nats that fsd run would refuse. The
// diagnostic names the list element by its place, not by its text, which
// may carry a password (the position shows it to whoever has the file).
func checkNATSURL(d *decoder, n *yaml.Node, list string) {
	if list == "" {
		return // the schema says it must not be empty
	}
	bad, problem := NATSURLProblem(list)
	if problem == "" {
		return
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
	d.errorf(n, "value", "board.nats:%s %s", at, problem)
}

// Redacted stands for the user, password or token of a NATS URL that
// RedactNATSURL dropped.
const Redacted = "REDACTED"

// RedactNATSURL drops the user, password or token of every URL of a
// comma-separated NATS URL list, for errors, logs and run records: a NATS
// credential is a secret like a model's API key.
func RedactNATSURL(u string) string {
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
