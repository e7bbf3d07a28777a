// Package fakeserver is an httptest server for provider tests: it answers
// each request with the next scripted reply, keeps every request it saw,
// and can dribble a body out in tiny flushed chunks, as a real SSE stream
// split at arbitrary byte boundaries arrives.
package fakeserver
