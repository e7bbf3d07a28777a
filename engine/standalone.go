package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/fsdrun/fsd/approval"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/supply"
	"github.com/fsdrun/fsd/transcript"
	"github.com/fsdrun/fsd/visibility"
)

// FuncTool is a tool backed by a Go function, for Generate.
type FuncTool struct {
	Def model.ToolDef
	// Run answers a call. An error becomes a tool error the model reads;
	// it never stops the generator.
	Run func(ctx context.Context, args json.RawMessage) (string, error)
}

// GeneratorConfig is the low-level generator of fsd, usable without YAML:
// what a board worker is, with every lever in reach. The zero value of
// each field is the worker default.
type GeneratorConfig struct {
	// Name tags the generator's events (the agent) and names it in errors.
	Name  string
	Model model.Model
	// Prompt is the generator's current-context block.
	Prompt string
	// History is the conversation it may inherit; HistoryTurns bounds the
	// inheritance to the last N whole turns (0: all of History, never a
	// partial turn or a call still waiting for its result).
	History      []model.Message
	HistoryTurns int
	// Visibility routes the generator's items: Client streams them to
	// Sink, History hands them to Parent. The zero value keeps them private.
	Visibility spec.Visibility
	Sink       event.Sink
	Parent     func(model.Message)
	Tools      []FuncTool
	// MaxSteps bounds the loop (default 25); MaxMessages the window of each
	// request (default 60).
	MaxSteps    int
	MaxMessages int
	// Output, when set, is the JSON Schema the final answer must match
	// (an agent's `output:`): Generate then answers the JSON, compact,
	// after at most OutputRepairs repair turns (nil: spec.DefaultOutputRepairs),
	// or fails with an error wrapping ErrOutput.
	Output        map[string]any
	OutputRepairs *int
}

// Generate runs one generator on input until its final answer: each step
// assembles the request (prompt, the window of its transcript, the tools),
// calls the model and runs the tool calls in order. Reaching MaxSteps is an
// error wrapping ErrMaxSteps.
func Generate(ctx context.Context, cfg GeneratorConfig, input string) (string, error) {
	if cfg.Model == nil {
		return "", errors.New("engine: Generate needs a model")
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = spec.DefaultMaxSteps
	}
	if cfg.MaxMessages <= 0 {
		cfg.MaxMessages = spec.DefaultMaxTranscriptMessages
	}
	// Events name the run "generate": there is no run around it.
	ev := &emitter{runID: "generate", now: time.Now, sink: cfg.Sink}
	typed, err := newTypedOutput(spec.Agent{Name: cfg.Name, Output: cfg.Output, OutputRepairs: cfg.OutputRepairs})
	if err != nil {
		return "", fmt.Errorf("engine: %w", err)
	}
	env := &funcEnv{prompt: cfg.Prompt, byName: map[string]FuncTool{}}
	if typed != nil {
		env.prompt += typed.prompt()
	}
	for _, t := range cfg.Tools {
		env.defs = append(env.defs, t.Def)
		env.byName[t.Def.Name] = t
	}
	tr := transcript.New(nil)
	for _, m := range supply.Conversation(cfg.History, cfg.HistoryTurns) {
		if err := tr.AppendMessage(m); err != nil {
			return "", fmt.Errorf("engine: history: %w", err)
		}
	}
	router := visibility.New(cfg.Visibility, cfg.Sink, visibility.Tags{Run: ev.runID, Agent: cfg.Name}, cfg.Parent)
	g := &generator{
		genDeps: genDeps{runID: ev.runID, emit: ev.emit, tokens: sharedTokens},
		model:   cfg.Model, tr: tr, env: env, item: router.Item,
		caller:      model.Caller{Agent: cfg.Name, Input: input},
		maxMessages: cfg.MaxMessages, maxSteps: cfg.MaxSteps, output: typed,
	}
	if err := g.add(model.Message{Role: model.User, Text: input}); err != nil {
		return "", err
	}
	return g.loop(ctx)
}

// funcEnv is Generate's world: a fixed prompt and Go-function tools.
type funcEnv struct {
	prompt string
	defs   []model.ToolDef
	byName map[string]FuncTool
}

func (f *funcEnv) prepare(context.Context)        {}
func (f *funcEnv) contextBlock() (string, string) { return f.prompt, "" }
func (f *funcEnv) tools() []model.ToolDef         { return f.defs }
func (f *funcEnv) loaded(string) bool             { return true }
func (f *funcEnv) current(string, string) bool    { return true }
func (f *funcEnv) settle()                        {}
func (f *funcEnv) command(string) (bool, bool)    { return false, false }

// approval: Go functions given to Generate ask for no approval.
func (f *funcEnv) approval(model.ToolCall) approval.Tool { return approval.Tool{} }
func (f *funcEnv) call(ctx context.Context, c model.ToolCall) (res model.ToolResult) {
	t, ok := f.byName[c.Name]
	if !ok {
		return model.ToolResult{Text: "Unknown tool: " + c.Name, IsError: true}
	}
	defer func() {
		if p := recover(); p != nil {
			res = model.ToolResult{Text: fmt.Sprintf("tool %s failed: %v", c.Name, p), IsError: true}
		}
	}()
	text, err := t.Run(ctx, c.Args)
	if err != nil {
		return model.ToolResult{Text: err.Error(), IsError: true}
	}
	return model.ToolResult{Text: text}
}
