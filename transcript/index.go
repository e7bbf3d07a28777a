package transcript

import (
	"errors"
	"fmt"
	"sort"

	"github.com/fsdrun/fsd/model"
)

// ErrMalformed is wrapped by every error about a message that would break
// the transcript's shape: a tool result that answers no open call, a result
// out of call order, or a new message while calls still await results.
// Providers reject such sequences too, so the transcript refuses them at the
// source instead of letting a window carry them.
var ErrMalformed = errors.New("malformed transcript")

// Index holds the turn and group boundaries of a message sequence as it
// grows, so windows never rescan it (W4).
//
// A turn starts at a user message. A group is an assistant message plus the
// results of its calls, which must follow it directly and in call order; an
// assistant message without calls is a group of one, and so is a context
// line (model.Context). The last group may be open (in flight): some of its
// calls have no result yet.
//
// The zero Index is empty and ready to use. An Index is not safe for
// concurrent use; Transcript guards its own.
type Index struct {
	turns  []int // position of each user message
	groups []int // position of each assistant message and context line
	n      int   // messages indexed

	// The open group: its position, its calls and how many are answered.
	openAt    int
	openCalls []model.ToolCall
	answered  int

	// Where the last WindowLow began, kept while it still fits so that
	// consecutive windows share their first messages (a cacheable
	// prefix): from is a turn start, or with trim the first group kept
	// after the user message of the turn at fromTurn.
	held     bool
	trim     bool
	from     int
	fromTurn int

	// head is the user message the last window begins with when it is
	// not a suffix of whole turns (spans reads it).
	head int
}

// LowWater is where a window that must shed messages goes down to: half
// the cap (at least 1). Dropping in a batch, not one message per request,
// keeps the window's first message in place for many requests, so a
// provider's prompt cache can serve the prefix they share.
func LowWater(cap int) int {
	return max(cap/2, 1)
}

// Add indexes m as the next message. It returns an error wrapping
// ErrMalformed, and indexes nothing, when m cannot come next.
func (x *Index) Add(m model.Message) error {
	pending := len(x.openCalls) - x.answered
	switch m.Role {
	case model.User, model.Assistant:
		if pending > 0 {
			return fmt.Errorf("%w: %s message while %d of %d calls of message %d await results (answer them first, e.g. as cancelled)",
				ErrMalformed, m.Role, pending, len(x.openCalls), x.openAt)
		}
		if m.Role == model.User {
			x.turns = append(x.turns, x.n)
		} else {
			x.groups = append(x.groups, x.n)
			x.openAt, x.openCalls, x.answered = x.n, m.Calls, 0
		}
	case model.Context:
		// A context line is a group of one: it may leave the window on its
		// own, and never opens a turn (the window's first message stays the
		// person's request). It cannot split a call from its result.
		if pending > 0 {
			return fmt.Errorf("%w: context line while %d of %d calls of message %d await results (it goes after them)",
				ErrMalformed, pending, len(x.openCalls), x.openAt)
		}
		x.groups = append(x.groups, x.n)
	case model.Tool:
		if pending == 0 {
			return fmt.Errorf("%w: tool result for call %q answers no open call", ErrMalformed, m.CallID)
		}
		if want := x.openCalls[x.answered].ID; m.CallID != want {
			return fmt.Errorf("%w: tool result for call %q, want %q (results follow their calls in order)",
				ErrMalformed, m.CallID, want)
		}
		x.answered++
	default:
		return fmt.Errorf("%w: unknown role %q", ErrMalformed, m.Role)
	}
	x.n++
	return nil
}

// Len is the number of messages indexed.
func (x *Index) Len() int { return x.n }

// InFlight reports the calls of the open group that await results, in
// call order; nil when no call is open.
func (x *Index) InFlight() []model.ToolCall {
	if x.answered >= len(x.openCalls) {
		return nil
	}
	return x.openCalls[x.answered:len(x.openCalls):len(x.openCalls)]
}

// end is where complete messages end: before the open group, if any, so an
// assistant message whose calls lack results never reaches a window.
func (x *Index) end() int {
	if x.answered < len(x.openCalls) {
		return x.openAt
	}
	return x.n
}

// Window returns the messages a request carries under a cap of max (W1,
// W2): the newest whole turns that fit, oldest leaving first. If the
// current turn alone exceeds max, it returns that turn's user message and
// the newest whole groups that fit beside it (only the user message if not
// even one does). The open group and anything before the first user message
// are never included. max < 1 yields nil.
//
// msgs must be the sequence x indexed. The result is read-only: when it is
// a plain suffix it shares msgs' array (capacity clipped, so appending to
// it copies). It costs O(log n) plus the trimmed case's copy.
func (x *Index) Window(msgs []model.Message, max int) []model.Message {
	end := x.end()
	if max < 1 || len(x.turns) == 0 || len(msgs) < end {
		return nil
	}
	cur := x.turns[len(x.turns)-1] // never at or past end: see Add
	if end-cur <= max {
		// The earliest turn start s with end-s <= max.
		s := searchTail(x.turns, end-max, max)
		return msgs[s:end:end]
	}
	// The current turn alone is too long: its user message plus the newest
	// groups starting at or after end-(max-1). Every message after the user
	// message belongs to a group that starts after it, so those groups are
	// contiguous up to end.
	g := min(searchTail(x.groups, end-(max-1), max), end)
	x.head = cur
	w := make([]model.Message, 0, 1+end-g)
	w = append(w, msgs[cur])
	return append(w, msgs[g:end]...)
}

// WindowLow is Window with hysteresis (W1): the window keeps its first
// message from one call to the next while the messages from there to the
// end fit max; when they no longer do, it drops whole turns — or, in a
// turn too long for the cap, whole groups after its user message — down to
// at most low messages (where whole turns or groups allow), then grows
// again. It is never over max, starts at a user message and never splits
// a group (W2). low is clamped to [1, max]. The cost is Window's (W4).
func (x *Index) WindowLow(msgs []model.Message, max, low int) []model.Message {
	end := x.end()
	if max < 1 || len(x.turns) == 0 || len(msgs) < end {
		return nil
	}
	if low > max {
		low = max
	}
	if low < 1 {
		low = 1
	}
	cur := x.turns[len(x.turns)-1]
	if end-cur <= max {
		s := x.from
		if !x.held || x.trim || s > cur || end-s > max {
			// The earliest turn start within low; the current turn if
			// even it is longer than low (it fits max).
			s = min(searchTail(x.turns, end-low, low), cur)
		}
		x.held, x.trim, x.from = true, false, s
		return msgs[s:end:end]
	}
	g := x.from
	if !x.held || !x.trim || x.fromTurn != cur || 1+end-g > max {
		g = searchTail(x.groups, end-(low-1), low)
		if g >= end {
			g = min(searchTail(x.groups, end-(max-1), max), end)
		}
	}
	x.held, x.trim, x.from, x.fromTurn, x.head = true, true, g, cur, cur
	w := make([]model.Message, 0, 1+end-g)
	w = append(w, msgs[cur])
	return append(w, msgs[g:end]...)
}

// WindowOldest is Window shedding one group at a time (W5, window-shed:
// oldest): the most messages that fit max, the oldest group
// leaving first. A window that begins inside a turn keeps that turn's user
// message ahead of its newest groups, so it still starts at a user message
// and never splits a group (W2). No hysteresis: past the cap the window's
// first message moves on with every group added. The cost is Window's
// plus a search of the turns (W4).
func (x *Index) WindowOldest(msgs []model.Message, max int) []model.Message {
	end := x.end()
	if max < 1 || len(x.turns) == 0 || len(msgs) < end {
		return nil
	}
	// The earliest whole turn that fits, and the earliest group that fits
	// behind a user message; whichever begins earlier keeps more.
	lo := end - (max - 1)
	if lo <= x.turns[0] {
		lo = x.turns[0] + 1 // a group behind the first user message
	}
	s := searchTail(x.turns, end-max, max)
	g := min(searchTail(x.groups, lo, max), end)
	if s <= g {
		return msgs[s:end:end]
	}
	x.head = x.turns[sort.SearchInts(x.turns, g)-1]
	w := make([]model.Message, 0, 1+end-g)
	w = append(w, msgs[x.head])
	return append(w, msgs[g:end]...)
}

// searchTail returns the first of the sorted, distinct positions in pos
// that is at least lo, or an int beyond every position if none is. Callers
// look for positions in [lo, end) with end-lo <= span, and at most span+1
// distinct positions lie there or after, so only pos's tail is searched:
// the cost and the memory touched do not grow with the transcript (W4).
func searchTail(pos []int, lo, span int) int {
	tail := pos[max(len(pos)-span-1, 0):]
	i := sort.SearchInts(tail, lo)
	if i == len(tail) {
		return int(^uint(0) >> 1)
	}
	return tail[i]
}

// WindowOf indexes msgs and returns their window under max. It is for
// callers that hold a plain slice (tests, tools reading a run record); a
// Transcript keeps its index as it grows and needs no rescan.
func WindowOf(msgs []model.Message, max int) ([]model.Message, error) {
	var x Index
	for i, m := range msgs {
		if err := x.Add(m); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
	}
	return x.Window(msgs, max), nil
}

// Span is a half-open range [From, To) of message positions.
type Span struct {
	From int `json:"from"`
	To   int `json:"to"`
}

// spans returns the positions in msgs of w, a window just returned by
// Window or WindowLow: one span when it is a suffix of whole turns, two
// when it is a turn's user message and the newest groups. A run
// record keeps these instead of the messages, so a request can be rebuilt
// from the transcript without storing it again.
func (x *Index) spans(msgs, w []model.Message) []Span {
	if len(w) == 0 {
		return nil
	}
	end := x.end()
	if s := end - len(w); s >= 0 && &msgs[s] == &w[0] {
		return []Span{{s, end}} // a suffix shares msgs' array
	}
	h := x.head
	if len(w) == 1 {
		return []Span{{h, h + 1}}
	}
	return []Span{{h, h + 1}, {end - (len(w) - 1), end}}
}
