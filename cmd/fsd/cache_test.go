package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
)

// helloReplies is the hello run: read, greet, a one-task board, the
// writer's note, the answer. Only the host's requests and the writer's
// come in this order, so one list serves a stand-in that answers in order.
var helloReplies = []fakeReply{
	{calls: []fakeCall{{"read_skill", `{"id":"greeter"}`}}},
	{calls: []fakeCall{{"greet", `{"name":"Ada"}`}}},
	{calls: []fakeCall{{"addTask", `{"id":"note","goal":"Welcome note for Ada","assignee":"writer"}`}}},
	{calls: []fakeCall{{"runBoard", `{}`}}},
	{text: "Welcome aboard, Ada!"},
	{text: "Ada is welcomed; the note is ready."},
}

// helloWorkflow writes the hello workflow, with `cache: off` when off, to
// a fresh folder.
func helloWorkflow(t *testing.T, off bool) string {
	t.Helper()
	skills, err := filepath.Abs("../../examples/hello/skills")
	if err != nil {
		t.Fatal(err)
	}
	wf := fmt.Sprintf("name: hello\nskills: [%q]\nhost: {prompt: You welcome new colleagues.}\ninput: Welcome Ada to the team.\n", skills)
	if off {
		wf += "cache: off\n"
	}
	path := filepath.Join(t.TempDir(), "hello.workflow.yaml")
	if err := os.WriteFile(path, []byte(wf), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// requestUsage returns the usage of a run's request events, the host's
// first, by generator ("" for the host, else the task id).
func requestUsage(t *testing.T, out string) map[string][]model.Usage {
	t.Helper()
	got := map[string][]model.Usage{}
	for _, e := range events(t, out) {
		if e.Type != event.Request {
			continue
		}
		if e.Usage == nil {
			t.Fatalf("request event without usage: %+v", e)
		}
		got[e.Task] = append(got[e.Task], *e.Usage)
	}
	return got
}

// Prompt caching end to end against stand-in Anthropic servers: by default
// every request carries cache_control breakpoints, `cache: off` sends none; the cache reads and
// writes the provider reports come back in each request event.
func TestAnthropicCachingOnTheWire(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("cache off %v", off), func(t *testing.T) {
			srv, bodies := scriptedAnthropicUsage(t, func(gen string, step int) fakeReply {
				if strings.Contains(gen, "| Task note") {
					return helloReplies[4]
				}
				host := []fakeReply{helloReplies[0], helloReplies[1], helloReplies[2], helloReplies[3], helloReplies[5]}
				return host[step]
			}, map[string]any{"input_tokens": 10, "cache_creation_input_tokens": 30, "cache_read_input_tokens": 900, "output_tokens": 5})
			t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
			t.Setenv("ANTHROPIC_BASE_URL", srv.URL)
			code, out, errs := fsd(t, "run", helloWorkflow(t, off), "--model", "anthropic/claude-test", "--events", "json",
				"--runs-dir", filepath.Join(t.TempDir(), "runs"))
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errs)
			}
			gens := bodies()
			if len(gens) != 2 {
				t.Fatalf("%d generators, want the host and the writer", len(gens))
			}
			for g, reqs := range gens {
				for i, b := range reqs {
					// After the tools (the writer has none), the system
					// block, the previous request's end, the last message.
					want := 2
					if strings.Contains(b, `"tools":`) {
						want++
					}
					if i > 0 {
						want++
					}
					if off {
						want = 0
					}
					if n := strings.Count(b, `"cache_control"`); n != want {
						t.Errorf("%.30s request %d: %d cache_control breakpoints, want %d", g, i+1, n, want)
					}
				}
			}
			usage := requestUsage(t, out)
			if len(usage[""]) != 5 || len(usage["note"]) != 1 {
				t.Fatalf("request events: %d of the host, %d of the writer; want 5 and 1", len(usage[""]), len(usage["note"]))
			}
			for g, us := range usage {
				for i, u := range us {
					if want := (model.Usage{InputTokens: 940, OutputTokens: 5, CachedInputTokens: 900, CacheWriteTokens: 30}); u != want {
						t.Errorf("generator %q request %d: usage %+v, want %+v", g, i+1, u, want)
					}
				}
			}
		})
	}
}

// Prompt caching end to end against a stand-in OpenAI server: by default
// each request carries a prompt_cache_key of its workflow and agent — the
// same for every request of one agent in every run, another for each
// agent — `cache: per-run` one of its run and generator, and `cache: off`
// none; cached prompt tokens come back in each request event.
func TestOpenAICachingOnTheWire(t *testing.T) {
	keys := map[string]string{} // key -> run and generator that sent it
	for run, mode := range []string{"on", "on", "per-run", "per-run", "off"} {
		srv, bodies := fakeOpenAIUsage(t, helloReplies, map[string]any{"prompt_tokens": 1000, "completion_tokens": 5, "total_tokens": 1005,
			"prompt_tokens_details": map[string]any{"cached_tokens": 768}})
		t.Setenv("OPENAI_API_KEY", "sk-test")
		t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
		wf := helloWorkflow(t, mode == "off")
		if mode == "per-run" {
			appendFile(t, wf, "cache: per-run\n")
		}
		code, out, errs := fsd(t, "run", wf, "--model", "openai/gpt-test", "--events", "json",
			"--runs-dir", filepath.Join(t.TempDir(), "runs"))
		if code != exitOK {
			t.Fatalf("run %d: exit %d: %s", run+1, code, errs)
		}
		for i, b := range bodies() {
			var body struct {
				Key      string `json:"prompt_cache_key"`
				Messages []struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal([]byte(strings.SplitN(b, "\n", 2)[0]), &body); err != nil {
				t.Fatal(err)
			}
			gen, agent := "host", "host"
			if len(body.Messages) > 1 && strings.HasPrefix(body.Messages[1].Content, "Task note") {
				gen, agent = "task:note", "greeter/writer"
			}
			owner := fmt.Sprint(run, gen) // per-run: each run's own
			want := "fsd/[0-9]{8}-[0-9]{6}-[0-9a-f]{8}/" + gen
			if mode == "on" {
				owner, want = gen, "fsd/hello/"+agent
			}
			switch {
			case mode == "off" && body.Key != "":
				t.Errorf("cache: off, request %d carries prompt_cache_key %q", i+1, body.Key)
			case mode == "off":
			case !regexp.MustCompile("^" + want + "$").MatchString(body.Key):
				t.Errorf("run %d request %d (%s, cache: %s): prompt_cache_key %q, want %s", run+1, i+1, gen, mode, body.Key, want)
			case keys[body.Key] != "" && keys[body.Key] != owner:
				t.Errorf("run %d request %d (%s): prompt_cache_key %q was %s's too", run+1, i+1, gen, body.Key, keys[body.Key])
			default:
				keys[body.Key] = owner
			}
		}
		for g, us := range requestUsage(t, out) {
			for i, u := range us {
				if want := (model.Usage{InputTokens: 1000, OutputTokens: 5, CachedInputTokens: 768}); u != want {
					t.Errorf("generator %q request %d: usage %+v, want %+v", g, i+1, u, want)
				}
			}
		}
	}
	if len(keys) != 6 {
		t.Errorf("keys %v, want one per agent (2) shared by the runs with cache: on, and one per run (2) and generator (2) with per-run", keys)
	}
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}
