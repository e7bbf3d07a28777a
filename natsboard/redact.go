package natsboard

import "github.com/fsdrun/fsd/spec"

// Redacted stands for the user, password or token of a URL that RedactURL
// dropped.
const Redacted = spec.Redacted

// RedactURL drops the user, password or token of every URL of a
// comma-separated NATS URL list (spec.RedactNATSURL), for errors, logs and
// run records.
func RedactURL(u string) string { return spec.RedactNATSURL(u) }
