package spec

// Readers is which surface the reader tools offer the model.
type Readers string

// The reader surfaces. The empty Readers is ReadersCompact.
const (
	// ReadersCompact is two tools, artifact_md and artifact_read, each
	// with a selector argument get: the fewest tokens per request.
	ReadersCompact Readers = "compact"
	// ReadersNamed is one tool per operation (artifact_md_headings,
	// artifact_cat, …): the same operations, no selector to fill in, more
	// tokens per request.
	ReadersNamed Readers = "named"
)

// WindowShed is how a window over max-transcript-messages lets the oldest
// messages go (W1).
type WindowShed string

// The shedding policies. The empty WindowShed is ShedHalf.
const (
	// ShedHalf drops whole turns in a batch, down to half the cap, so the
	// window's first message stays put for many requests and a provider's
	// prompt cache serves their shared prefix.
	ShedHalf WindowShed = "half"
	// ShedOldest drops the oldest group (a call with its results, or a
	// message) one at a time, keeping as much history as fits; past the
	// cap every request starts somewhere new, so the prompt cache serves
	// only the part before the window.
	ShedOldest WindowShed = "oldest"
)
