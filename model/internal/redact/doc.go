// Package redact removes secret values from text and errors before they can
// reach a log, an event, a run record or a recording. It is shared by the
// providers and the recorder; it decides nothing about which values are
// secret (callers pass them).
package redact
