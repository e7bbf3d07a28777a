package mcptool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/tool"
)

// Tool is one tool of an MCP server, as offered to the model.
type Tool struct {
	srv    *server
	remote string // the server's name for it
	def    model.ToolDef
	input  *tool.Input
}

// Keys of a call's _meta: the run and call ids (FSD_RUN_ID and
// FSD_CALL_ID for command tools), stable across fsd resume.
const (
	MetaRunID  = "fsd/run-id"
	MetaCallID = "fsd/call-id"
)

// pingTimeout bounds the ping that tells a call's broken connection from
// an answer that could not be decoded.
const pingTimeout = 5 * time.Second

// maxName is the longest tool name the model providers accept.
const maxName = 64

// ToolName is the name a server's tool is offered under:
// mcp__SKILL__SERVER__TOOL. Characters outside a-z, A-Z, 0-9, _ and -
// become _; a name that had any, or is longer than 64 characters, is cut
// to 55 and ends in _ and 8 hex digits of the SHA-256 of the full name, so
// two tools never share a name.
func ToolName(skill, server, tool string) string {
	full := spec.MCPToolPrefix + skill + "__" + server + "__" + tool
	clean := []byte(full)
	for i, c := range clean {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			clean[i] = '_'
		}
	}
	if string(clean) == full && len(full) <= maxName {
		return full
	}
	sum := sha256.Sum256([]byte(full))
	return string(clean[:min(len(clean), maxName-9)]) + "_" + hex.EncodeToString(sum[:4])
}

// Def is the tool as offered to the model.
func (t *Tool) Def() model.ToolDef { return t.def }

// Server is the name of the tool's server; Remote the server's name for it.
func (t *Tool) Server() string { return t.srv.cfg.Name }

// Remote is the server's own name for the tool.
func (t *Tool) Remote() string { return t.remote }

// list fetches the server's tools (all pages), keeps those the allowlist
// lets through and that are within a manifest tool's size limits, and
// compiles their input schemas. notes say which tools were dropped and
// which allowlisted ones the server does not offer.
func (s *server) list(ctx context.Context) (out []*Tool, notes []string, err error) {
	cs, err := s.session(ctx)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.pool.startTimeout)
	defer cancel()
	seen := map[string]string{}
	listed := map[string]bool{}
	for mt, err := range cs.Tools(ctx, nil) {
		if err != nil {
			if !protocolError(err) {
				s.dropped(cs)
			}
			return nil, nil, fmt.Errorf("listing tools: %w", err)
		}
		if !s.cfg.Allows(mt.Name) {
			continue
		}
		listed[mt.Name] = true
		desc := mt.Description
		if desc == "" {
			desc = mt.Title
		}
		if part, size, limit := oversized(desc, mt.InputSchema); part != "" {
			s.pool.log.Warn().Str("server", s.cfg.Name).Str("tool", mt.Name).Str("part", part).Int("bytes", size).Int("limit", limit).
				Msg("MCP tool over the size limit is not offered")
			notes = append(notes, fmt.Sprintf("MCP server %s: tool %s is not offered: its %s is %d bytes, over the %d KiB limit", s.cfg.Name, mt.Name, part, size, limit>>10))
			continue
		}
		name := ToolName(s.skill.ID, s.cfg.Name, mt.Name)
		if prev, dup := seen[name]; dup {
			s.pool.log.Warn().Str("server", s.cfg.Name).Str("tool", mt.Name).Str("other", prev).Msg("MCP server lists a tool twice; the first is kept")
			continue
		}
		seen[name] = mt.Name
		var schema any = mt.InputSchema
		if schema == nil {
			schema = map[string]any{"type": "object"}
		}
		in, err := tool.CompileInput(name, schema)
		if err != nil {
			s.pool.log.Warn().Str("server", s.cfg.Name).Str("tool", mt.Name).Err(err).Msg("MCP tool's input schema does not compile; arguments are checked only for being an object")
			in, _ = tool.CompileInput(name, nil)
		}
		out = append(out, &Tool{srv: s, remote: mt.Name, input: in,
			def: model.ToolDef{Name: name, Description: desc, Parameters: in.Params()}})
	}
	if missing := notOffered(s.cfg, listed); len(missing) > 0 {
		notes = append(notes, fmt.Sprintf("MCP server %s does not offer %q, named in its tools allowlist", s.cfg.Name, missing))
	}
	return out, notes, nil
}

// oversized names the part of a server's tool that is over the limits a
// manifest's tool has (spec.MaxToolDescription, spec.MaxToolSchema, measured
// the same way), with its size; "" when both fit. Both parts go with every
// model request that offers the tool, so a huge one would weigh on every
// call of the run, and is dropped before its schema is compiled.
func oversized(desc string, schema any) (part string, size, limit int) {
	if len(desc) > spec.MaxToolDescription {
		return "description", len(desc), spec.MaxToolDescription
	}
	if schema != nil && spec.JSONSize(schema, spec.MaxToolSchema) > spec.MaxToolSchema {
		return "input schema", spec.JSONSize(schema, math.MaxInt), spec.MaxToolSchema
	}
	return "", 0, 0
}

// Call checks args against the server's input schema, sends the call and
// turns the answer into what the model reads. It never returns a Go error.
func (t *Tool) Call(ctx context.Context, args json.RawMessage, _ tool.KV) tool.Result {
	in, res, ok := t.input.Decode(args)
	if !ok {
		return res
	}
	s := t.srv
	cs, err := s.session(ctx)
	if err != nil {
		return errorf("%s is not available: %v", s.who(), err)
	}
	timeout := s.callTimeout()
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	params := &mcp.CallToolParams{Name: t.remote, Arguments: in}
	if ids, ok := tool.CallIDsFrom(ctx); ok {
		// The same ids a command gets as FSD_RUN_ID and FSD_CALL_ID, stable
		// across resume: a server can make a call idempotent with them.
		params.Meta = mcp.Meta{MetaRunID: ids.Run, MetaCallID: ids.Call}
	}
	hooks := tool.HooksFrom(ctx)
	token, end := s.begin(callCtx, hooks)
	defer end()
	if hooks.Progress != nil {
		params.SetProgressToken(token)
	}
	// The call's W3C trace context, where MCP puts it (_meta.traceparent,
	// _meta.tracestate): a server that traces joins the call's span.
	tc := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, tc)
	for k, v := range tc {
		if params.Meta == nil {
			params.Meta = mcp.Meta{}
		}
		params.Meta[k] = v
	}
	out, err := cs.CallTool(callCtx, params)
	switch {
	case err == nil:
		return t.result(callCtx, cs, out)
	case ctx.Err() != nil:
		return errorf("cancelled: %v", context.Cause(ctx))
	case callCtx.Err() != nil:
		return errorf("timed out after %s: %s did not answer (the call was cancelled)", timeout, s.who())
	case protocolError(err):
		return errorf("%s refused the call: %v", s.who(), err)
	}
	// The SDK fails a call the same way for a broken connection and for an
	// answer it cannot decode (an unknown content type, a field of the
	// wrong type). A server that still answers a ping is up: it is kept,
	// and the model reads what was wrong with the answer, not that the
	// server stopped.
	pingCtx, cancelPing := context.WithTimeout(ctx, pingTimeout)
	defer cancelPing()
	if cs.Ping(pingCtx, nil) == nil {
		return errorf("%s answered with a result fsd cannot read: %v", s.who(), err)
	}
	why := s.dropped(cs)
	return errorf("%s stopped during the call (%v; %s); it will be started again on the next call", s.who(), err, why)
}

// result renders an MCP result: text parts as they are, other content
// kept as artifacts and named by handle; images and audio also go with the
// result as media, for a model that takes them, and a resource link is
// read (resources/read) and kept like an embedded resource.
func (t *Tool) result(ctx context.Context, cs *mcp.ClientSession, r *mcp.CallToolResult) tool.Result {
	var b strings.Builder
	var media []model.Media
	addMedia := func(mime string, data []byte) {
		if size := mediaSize(media) + len(data); size <= MaxMediaBytes {
			media = append(media, model.Media{MIME: mime, Data: data})
		}
	}
	links := 0
	for i, c := range r.Content {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch c := c.(type) {
		case *mcp.TextContent:
			b.WriteString(c.Text)
		case *mcp.ImageContent:
			b.WriteString(t.keep(i, "image", c.MIMEType, c.Data))
			addMedia(c.MIMEType, c.Data)
		case *mcp.AudioContent:
			b.WriteString(t.keep(i, "audio", c.MIMEType, c.Data))
			addMedia(c.MIMEType, c.Data)
		case *mcp.EmbeddedResource:
			if c.Resource == nil {
				b.WriteString("[empty embedded resource]")
				continue
			}
			data := c.Resource.Blob
			if data == nil {
				data = []byte(c.Resource.Text)
			}
			fmt.Fprintf(&b, "resource %s: %s", c.Resource.URI, t.keep(i, "resource", c.Resource.MIMEType, data))
		case *mcp.ResourceLink:
			links++
			b.WriteString(t.link(ctx, cs, i, c, links))
		default:
			fmt.Fprintf(&b, "[content of type %T, which fsd does not render]", c)
		}
	}
	if len(r.Content) == 0 && r.StructuredContent != nil {
		j, err := json.Marshal(r.StructuredContent)
		if err == nil {
			b.Write(j)
		}
	}
	// Masked before the cut below, which could split a secret.
	text := t.srv.pool.mask(b.String())
	if text == "" {
		text = "(no output)"
	}
	res := tool.Result{Text: text, IsError: r.IsError}
	if h := tool.HooksFrom(ctx); h.Media != nil && len(media) > 0 {
		h.Media(media)
	}
	if len(text) > MaxResultBytes {
		cut := text[:MaxResultBytes]
		for i := 0; i < utf8.UTFMax-1 && len(cut) > 0; i++ {
			// Do not end on half a character.
			if r, size := utf8.DecodeLastRuneInString(cut); r != utf8.RuneError || size > 1 {
				break
			}
			cut = cut[:len(cut)-1]
		}
		res.Text = cut + fmt.Sprintf("\n[output truncated at %d MiB]", MaxResultBytes>>20)
		res.Truncated = true
	}
	return res
}

// keep spools one non-text part and says where it went.
func (t *Tool) keep(i int, kind, mime string, data []byte) string {
	what := fmt.Sprintf("%s (%s, %d bytes)", kind, orUnknown(mime), len(data))
	sp := t.srv.pool.spool
	if sp == nil {
		return "[" + what + ", not kept]"
	}
	name := fmt.Sprintf("%s-%s-%d%s", t.srv.cfg.Name, t.remote, i+1, extension(mime))
	h, err := sp.Keep(t.srv.skill.ID, name, data)
	if err != nil {
		return "[" + what + ", not kept: " + err.Error() + "]"
	}
	return fmt.Sprintf("[%s kept as artifact %s; page through it with artifact_read and this handle]", what, h)
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}

func extension(mime string) string {
	switch mime {
	case "text/markdown":
		return ".md"
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	case "application/json":
		return ".json"
	}
	if strings.HasPrefix(mime, "text/") {
		return ".txt"
	}
	return ".bin"
}

func errorf(format string, args ...any) tool.Result {
	return tool.Result{Text: fmt.Sprintf(format, args...), IsError: true}
}

// MaxMediaBytes bounds the images and audio one result hands a model
// (the providers' own limit for one image is about 5 MB); parts past it
// are kept as artifacts only.
const MaxMediaBytes = 5 << 20

// maxLinks bounds the resource links of one result fsd reads; the others
// are named with their URI only.
const maxLinks = 10

func mediaSize(ms []model.Media) int {
	n := 0
	for _, m := range ms {
		n += len(m.Data)
	}
	return n
}

// link reads a resource link's resource from its server and keeps its
// contents as artifacts, so the readers page through it like any other
// kept part; a link past maxLinks, or one the server cannot read, is
// named with its URI and why.
//
// P3: a resource link is read and kept.
func (t *Tool) link(ctx context.Context, cs *mcp.ClientSession, i int, c *mcp.ResourceLink, n int) string {
	what := fmt.Sprintf("resource link %s (%s)", c.Name, c.URI)
	if n > maxLinks {
		return fmt.Sprintf("[%s, not read: a result's first %d links are]", what, maxLinks)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: c.URI})
	if err != nil {
		return fmt.Sprintf("[%s, not read: %v]", what, err)
	}
	var b strings.Builder
	b.WriteString(what + ":")
	for _, rc := range rr.Contents {
		if rc == nil {
			continue
		}
		data, mime := rc.Blob, rc.MIMEType
		if data == nil {
			data = []byte(rc.Text)
		}
		if mime == "" {
			mime = c.MIMEType
		}
		b.WriteString(" " + t.keep(i, "resource", mime, data))
	}
	if len(rr.Contents) == 0 {
		b.WriteString(" [empty]")
	}
	return b.String()
}
