package telemetry

import (
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// This file writes an OTLP ExportTraceServiceRequest in the protobuf wire
// format with the package's own few primitives (wire.go). The generated
// OTLP types would bring the protobuf runtime, and their collector package
// gRPC and grpc-gateway, into fsd's build (about a fifth of a cold build's CPU) for one message
// we only ever write. Field numbers are those of opentelemetry-proto v1
// (trace/v1/trace.proto, common/v1/common.proto,
// resource/v1/resource.proto); TestEncodingDecodesWithTheOTLPTypes decodes
// the output with the official generated types, field by field.

// Field numbers.
const (
	reqResourceSpans = 1 // ExportTraceServiceRequest

	rsResource   = 1 // ResourceSpans
	rsScopeSpans = 2
	rsSchemaURL  = 3

	resAttributes = 1 // Resource
	resDropped    = 2

	ssScope     = 1 // ScopeSpans
	ssSpans     = 2
	ssSchemaURL = 3

	scopeName       = 1 // InstrumentationScope
	scopeVersion    = 2
	scopeAttributes = 3

	spanTraceID      = 1 // Span
	spanSpanID       = 2
	spanTraceState   = 3
	spanParentSpanID = 4
	spanName         = 5
	spanKind         = 6
	spanStart        = 7
	spanEnd          = 8
	spanAttributes   = 9
	spanDroppedAttrs = 10
	spanEvents       = 11
	spanDroppedEvts  = 12
	spanLinks        = 13
	spanDroppedLinks = 14
	spanStatus       = 15
	spanFlags        = 16

	eventTime       = 1 // Span.Event
	eventName       = 2
	eventAttributes = 3
	eventDropped    = 4

	linkTraceID    = 1 // Span.Link
	linkSpanID     = 2
	linkTraceState = 3
	linkAttributes = 4
	linkDropped    = 5
	linkFlags      = 6

	statusMessage = 2 // Status
	statusCode    = 3

	kvKey   = 1 // KeyValue
	kvValue = 2

	anyString = 1 // AnyValue
	anyBool   = 2
	anyInt    = 3
	anyDouble = 4
	anyArray  = 5

	arrayValues = 1 // ArrayValue

	// SpanFlags: the parent's remoteness is known, and whether it is remote.
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

// encodeRequest appends an ExportTraceServiceRequest holding spans to b,
// grouped by resource and then by instrumentation scope in the order they
// first appear.
func encodeRequest(b []byte, spans []sdktrace.ReadOnlySpan) []byte {
	type scopeGroup struct {
		scope instrumentation.Scope
		spans []sdktrace.ReadOnlySpan
	}
	type resGroup struct {
		res    *resource.Resource
		scopes []*scopeGroup
	}
	var groups []*resGroup
	byRes := map[attribute.Distinct]*resGroup{}
	for _, s := range spans {
		if s == nil {
			continue
		}
		key := s.Resource().Equivalent()
		g := byRes[key]
		if g == nil {
			g = &resGroup{res: s.Resource()}
			byRes[key] = g
			groups = append(groups, g)
		}
		var sg *scopeGroup
		for _, c := range g.scopes {
			if c.scope == s.InstrumentationScope() {
				sg = c
				break
			}
		}
		if sg == nil {
			sg = &scopeGroup{scope: s.InstrumentationScope()}
			g.scopes = append(g.scopes, sg)
		}
		sg.spans = append(sg.spans, s)
	}
	for _, g := range groups {
		b = appendMessage(b, reqResourceSpans, func(b []byte) []byte {
			b = appendMessage(b, rsResource, func(b []byte) []byte {
				return appendAttributes(b, resAttributes, g.res.Attributes())
			})
			for _, sg := range g.scopes {
				b = appendMessage(b, rsScopeSpans, func(b []byte) []byte {
					b = appendMessage(b, ssScope, func(b []byte) []byte {
						b = appendString(b, scopeName, sg.scope.Name)
						b = appendString(b, scopeVersion, sg.scope.Version)
						return appendAttributes(b, scopeAttributes, sg.scope.Attributes.ToSlice())
					})
					for _, s := range sg.spans {
						b = appendMessage(b, ssSpans, func(b []byte) []byte { return appendSpan(b, s) })
					}
					return appendString(b, ssSchemaURL, sg.scope.SchemaURL)
				})
			}
			return appendString(b, rsSchemaURL, g.res.SchemaURL())
		})
	}
	return b
}

func appendSpan(b []byte, s sdktrace.ReadOnlySpan) []byte {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendBytes(b, spanTraceID, tid[:])
	b = appendBytes(b, spanSpanID, sid[:])
	b = appendString(b, spanTraceState, sc.TraceState().String())
	if p := s.Parent().SpanID(); p.IsValid() {
		b = appendBytes(b, spanParentSpanID, p[:])
	}
	b = appendString(b, spanName, s.Name())
	b = appendVarint(b, spanKind, uint64(kind(s.SpanKind())))
	b = appendFixed64(b, spanStart, unixNano(s.StartTime().UnixNano()))
	b = appendFixed64(b, spanEnd, unixNano(s.EndTime().UnixNano()))
	b = appendAttributes(b, spanAttributes, s.Attributes())
	b = appendVarint(b, spanDroppedAttrs, uint64(clamp32(s.DroppedAttributes())))
	for _, e := range s.Events() {
		b = appendMessage(b, spanEvents, func(b []byte) []byte {
			b = appendFixed64(b, eventTime, unixNano(e.Time.UnixNano()))
			b = appendString(b, eventName, e.Name)
			b = appendAttributes(b, eventAttributes, e.Attributes)
			return appendVarint(b, eventDropped, uint64(clamp32(e.DroppedAttributeCount)))
		})
	}
	b = appendVarint(b, spanDroppedEvts, uint64(clamp32(s.DroppedEvents())))
	for _, l := range s.Links() {
		b = appendMessage(b, spanLinks, func(b []byte) []byte {
			tid, sid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
			b = appendBytes(b, linkTraceID, tid[:])
			b = appendBytes(b, linkSpanID, sid[:])
			b = appendString(b, linkTraceState, l.SpanContext.TraceState().String())
			b = appendAttributes(b, linkAttributes, l.Attributes)
			b = appendVarint(b, linkDropped, uint64(clamp32(l.DroppedAttributeCount)))
			return appendFixed32(b, linkFlags, flags(l.SpanContext.TraceFlags(), l.SpanContext))
		})
	}
	b = appendVarint(b, spanDroppedLinks, uint64(clamp32(s.DroppedLinks())))
	st := s.Status()
	b = appendMessage(b, spanStatus, func(b []byte) []byte {
		b = appendString(b, statusMessage, st.Description)
		var c uint64 // STATUS_CODE_UNSET
		switch st.Code {
		case codes.Ok:
			c = 1
		case codes.Error:
			c = 2
		}
		return appendVarint(b, statusCode, c)
	})
	return appendFixed32(b, spanFlags, flags(sc.TraceFlags(), s.Parent()))
}

// kind maps the API's span kinds to OTLP's SpanKind numbers.
func kind(k trace.SpanKind) int {
	switch k {
	case trace.SpanKindInternal:
		return 1
	case trace.SpanKindServer:
		return 2
	case trace.SpanKindClient:
		return 3
	case trace.SpanKindProducer:
		return 4
	case trace.SpanKindConsumer:
		return 5
	}
	return 0
}

// flags are the W3C trace flags in the low byte, and whether the parent
// (or linked) context is remote.
func flags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	f := uint32(tf) | flagHasIsRemote
	if parent.IsRemote() {
		f |= flagIsRemote
	}
	return f
}

func appendAttributes(b []byte, num number, kvs []attribute.KeyValue) []byte {
	for _, kv := range kvs {
		b = appendMessage(b, num, func(b []byte) []byte {
			b = appendString(b, kvKey, string(kv.Key))
			return appendMessage(b, kvValue, func(b []byte) []byte { return appendValue(b, kv.Value) })
		})
	}
	return b
}

// appendValue writes an AnyValue's oneof. Its fields are written even when
// zero (false, 0, ""): a oneof's presence is the value.
func appendValue(b []byte, v attribute.Value) []byte {
	switch v.Type() {
	case attribute.BOOL:
		b = appendTag(b, anyBool, varintType)
		var x uint64
		if v.AsBool() {
			x = 1
		}
		return appendRawVarint(b, x)
	case attribute.INT64:
		b = appendTag(b, anyInt, varintType)
		return appendRawVarint(b, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b = appendTag(b, anyDouble, fixed64Type)
		return appendRawFixed64(b, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		b = appendTag(b, anyString, bytesType)
		return appendRawString(b, v.AsString())
	case attribute.BOOLSLICE:
		return appendArray(b, v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return appendArray(b, v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return appendArray(b, v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return appendArray(b, v.AsStringSlice(), attribute.StringValue)
	}
	// An invalid or unknown type: an empty AnyValue, as the OTel exporter
	// sends.
	return b
}

func appendArray[T any](b []byte, items []T, value func(T) attribute.Value) []byte {
	return appendMessage(b, anyArray, func(b []byte) []byte {
		for _, it := range items {
			b = appendMessage(b, arrayValues, func(b []byte) []byte { return appendValue(b, value(it)) })
		}
		return b
	})
}

// appendMessage writes field num holding the message that body appends:
// the body is written in place, then shifted right to make room for its
// length, so nested messages need no buffers of their own.
func appendMessage(b []byte, num number, body func([]byte) []byte) []byte {
	b = appendTag(b, num, bytesType)
	start := len(b)
	b = body(b)
	n := len(b) - start
	w := sizeVarint(uint64(n))
	b = append(b, make([]byte, w)...)
	copy(b[start+w:], b[start:start+n])
	appendRawVarint(b[start:start], uint64(n))
	return b
}

// Scalar fields; proto3 leaves zero values out.

func appendString(b []byte, num number, s string) []byte {
	if s == "" {
		return b
	}
	b = appendTag(b, num, bytesType)
	return appendRawString(b, s)
}

func appendBytes(b []byte, num number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	b = appendTag(b, num, bytesType)
	return appendRawBytes(b, v)
}

func appendVarint(b []byte, num number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = appendTag(b, num, varintType)
	return appendRawVarint(b, v)
}

func appendFixed64(b []byte, num number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = appendTag(b, num, fixed64Type)
	return appendRawFixed64(b, v)
}

func appendFixed32(b []byte, num number, v uint32) []byte {
	if v == 0 {
		return b
	}
	b = appendTag(b, num, fixed32Type)
	return appendRawFixed32(b, v)
}

func unixNano(n int64) uint64 { return uint64(max(0, n)) }

func clamp32(n int) uint32 { return uint32(min(max(n, 0), math.MaxUint32)) }

// partialSuccess reads an ExportTraceServiceResponse's partial_success
// (field 1: rejected_spans = 1, error_message = 2). A body that does not
// parse is no rejection: the export succeeded.
func partialSuccess(body []byte) (rejected int64, msg string) {
	ps := field(body, 1)
	if ps == nil {
		return 0, ""
	}
	for len(ps) > 0 {
		num, typ, n := consumeTag(ps)
		if n < 0 {
			return rejected, msg
		}
		ps = ps[n:]
		switch {
		case num == 1 && typ == varintType:
			v, m := consumeVarint(ps)
			if m < 0 {
				return rejected, msg
			}
			rejected, n = int64(v), m
		case num == 2 && typ == bytesType:
			v, m := consumeString(ps)
			if m < 0 {
				return rejected, msg
			}
			msg, n = v, m
		default:
			n = consumeFieldValue(num, typ, ps)
			if n < 0 {
				return rejected, msg
			}
		}
		ps = ps[n:]
	}
	return rejected, msg
}

// statusMessageOf reads a google.rpc.Status's message (field 2), which an
// OTLP/HTTP server may send with an error status.
func statusMessageOf(body []byte) string {
	return string(field(body, 2))
}

// field returns the last length-delimited field num of a message, or nil.
func field(msg []byte, want number) []byte {
	var out []byte
	for len(msg) > 0 {
		num, typ, n := consumeTag(msg)
		if n < 0 {
			return nil
		}
		msg = msg[n:]
		if num == want && typ == bytesType {
			v, m := consumeBytes(msg)
			if m < 0 {
				return nil
			}
			out, n = v, m
		} else if n = consumeFieldValue(num, typ, msg); n < 0 {
			return nil
		}
		msg = msg[n:]
	}
	return out
}
