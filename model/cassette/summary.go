package cassette

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/fsdrun/fsd/internal/redact"
	"github.com/fsdrun/fsd/model"
)

// headLen is how much of a text a summary keeps readable: enough to
// recognise a message in a divergence report, too little to bloat a file.
const headLen = 60

// Text summarises one text: its size, a hash, and its first words.
type Text struct {
	Len  int    `json:"len"`
	Hash string `json:"sha"`
	Head string `json:"head,omitempty"`
	// Lines hashes each line; kept for the context block only, so a
	// divergence can name the first line that changed.
	Lines []string `json:"lines,omitempty"`
}

// Call summarises one tool call.
type Call struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Args string `json:"args_sha"`
}

// Message summarises one transcript message.
type Message struct {
	Role     model.Role `json:"role"`
	Text     Text       `json:"text"`
	Calls    []Call     `json:"calls,omitempty"`
	CallID   string     `json:"call_id,omitempty"`
	Name     string     `json:"name,omitempty"`
	IsError  bool       `json:"error,omitempty"`
	Artifact string     `json:"artifact,omitempty"`
}

// Tool summarises one offered tool.
type Tool struct {
	Name string `json:"name"`
	Hash string `json:"sha"` // of description and schema
}

// Summary is what a cassette keeps of a request: enough to detect and
// explain any difference, without the full prompt.
type Summary struct {
	Agent    string    `json:"agent,omitempty"`
	Task     string    `json:"task,omitempty"`
	Goal     Text      `json:"goal"`
	Input    Text      `json:"input"`
	Context  Text      `json:"context"`
	Messages []Message `json:"messages"`
	Tools    []Tool    `json:"tools"`
}

// Summarize canonicalises req (secrets masked, JSON re-encoded with sorted
// keys) and summarises it. Caller.Step is left out: the place in the
// caller's sequence is the key, and a retried task restarts its steps.
func Summarize(req *model.Request, secrets redact.Secrets) Summary {
	s := Summary{
		Agent:    req.Caller.Agent,
		Task:     req.Caller.TaskID,
		Goal:     text(secrets.String(req.Caller.TaskGoal), false),
		Input:    text(secrets.String(req.Caller.Input), false),
		Context:  text(secrets.String(req.Context), true),
		Messages: make([]Message, 0, len(req.Messages)),
		Tools:    make([]Tool, 0, len(req.Tools)),
	}
	for _, m := range req.Messages {
		ms := Message{Role: m.Role, Text: text(secrets.String(m.Text), false), CallID: m.CallID, Name: m.Name, IsError: m.IsError, Artifact: m.Artifact}
		for _, c := range m.Calls {
			ms.Calls = append(ms.Calls, Call{ID: c.ID, Name: c.Name, Args: hash(secrets.String(canonical(c.Args)))})
		}
		s.Messages = append(s.Messages, ms)
	}
	for _, t := range req.Tools {
		s.Tools = append(s.Tools, Tool{Name: t.Name, Hash: hash(secrets.String(t.Description + "\x00" + canonical(t.Parameters)))})
	}
	return s
}

// Digest is the digest of a summary: equal digests, equal requests.
func (s Summary) Digest() string {
	b, _ := json.Marshal(s)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func text(s string, lines bool) Text {
	t := Text{Len: len(s), Hash: hash(s), Head: head(s)}
	if lines && s != "" {
		for _, l := range strings.Split(s, "\n") {
			t.Lines = append(t.Lines, hash(l)[:8])
		}
	}
	return t
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

func head(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= headLen {
		return s
	}
	return string([]rune(s)[:headLen]) + "…"
}

// canonical re-encodes JSON with sorted keys and no spacing, so that
// formatting never counts as a difference; text that is not JSON is kept.
func canonical(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return ""
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return string(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return string(raw)
	}
	return string(b)
}
