package natsboard

import "strings"

// Redacted stands for the user, password or token of a URL that RedactURL
// dropped.
const Redacted = "REDACTED"

// RedactURL drops the user, password or token of every URL of a
// comma-separated NATS URL list, for errors, logs and run records: a NATS
// credential is a secret like a model's API key.
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
