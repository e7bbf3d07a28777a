package promptcache

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// Lookback is how many blocks before a breakpoint the cache looks for an
// earlier entry (Anthropic's documented limit).
const Lookback = 20

// Cache is a prompt cache. The zero value is empty and ready; it is safe
// for concurrent use.
type Cache struct {
	mu      sync.Mutex
	entries map[string]bool
}

// Served is what the cache made of one request.
type Served struct {
	// Blocks is the request's content blocks, each rendered without its
	// cache_control; Read is how many of them the cache served (a prefix).
	Blocks []string
	Read   int
	// Breakpoints is how many blocks carried cache_control.
	Breakpoints int
}

// Prefix is the served blocks, concatenated.
func (s Served) Prefix() string { return strings.Join(s.Blocks[:s.Read], "") }

// Whole is all the request's blocks, concatenated.
func (s Served) Whole() string { return strings.Join(s.Blocks, "") }

// Send looks a Messages request body up in the cache, then writes the
// prefixes its breakpoints end.
func (c *Cache) Send(body []byte) (Served, error) {
	blocks, marks, err := split(body)
	if err != nil {
		return Served{}, err
	}
	keys := make([]string, len(blocks))
	var sb strings.Builder
	for i, b := range blocks {
		sb.WriteString(b)
		sb.WriteByte(0)
		keys[i] = sb.String()
	}
	s := Served{Blocks: blocks, Breakpoints: len(marks)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]bool{}
	}
	for _, m := range marks {
		for j := m; j >= 0 && j >= m-Lookback; j-- {
			if c.entries[keys[j]] {
				s.Read = max(s.Read, j+1)
				break
			}
		}
	}
	for _, m := range marks {
		c.entries[keys[m]] = true
	}
	return s, nil
}

// split renders a body's blocks in cache order, without cache_control,
// and returns the indexes of those that carried it. A message's first
// block carries its role, so blocks of different messages never match.
func split(body []byte) (blocks []string, marks []int, err error) {
	var b struct {
		Tools    []map[string]any `json:"tools"`
		System   json.RawMessage  `json:"system"`
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, nil, fmt.Errorf("promptcache: %w", err)
	}
	add := func(prefix string, x map[string]any) {
		if _, ok := x["cache_control"]; ok {
			marks = append(marks, len(blocks))
			delete(x, "cache_control")
		}
		j, _ := json.Marshal(x)
		blocks = append(blocks, prefix+string(j))
	}
	for _, t := range b.Tools {
		add("tool ", t)
	}
	var system []map[string]any
	if len(b.System) > 0 && b.System[0] == '"' {
		var text string
		_ = json.Unmarshal(b.System, &text)
		system = []map[string]any{{"type": "text", "text": text}}
	} else if len(b.System) > 0 {
		if err := json.Unmarshal(b.System, &system); err != nil {
			return nil, nil, fmt.Errorf("promptcache: system: %w", err)
		}
	}
	for _, s := range system {
		add("system ", s)
	}
	for _, m := range b.Messages {
		for i, x := range m.Content {
			prefix := ""
			if i == 0 {
				prefix = m.Role + " "
			}
			add(prefix, x)
		}
	}
	return blocks, marks, nil
}
