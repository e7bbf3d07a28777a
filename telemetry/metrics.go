package telemetry

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
)

// The GenAI client metrics fsd records, as the OpenTelemetry semantic
// conventions v1.41.1 specify them (model/gen-ai/metrics.yaml and
// docs/gen-ai/gen-ai-metrics.md): histograms with the bucket boundaries
// the conventions advise, recorded once per model call.
var (
	tokenUsage = &instrument{name: "gen_ai.client.token.usage", unit: "{token}",
		desc:   "Number of input and output tokens used.",
		bounds: []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}}
	opDuration = &instrument{name: "gen_ai.client.operation.duration", unit: "s",
		desc:   "GenAI operation duration.",
		bounds: []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}}
)

// instrument is one explicit-bucket histogram.
type instrument struct {
	name, unit, desc string
	bounds           []float64
}

// point is one histogram's data for one set of attributes, cumulative
// since the meter started.
type point struct {
	attrs         attribute.Set
	buckets       []uint64 // len(bounds)+1: (-inf, b0], (b0, b1], …, (bn, +inf)
	count         uint64
	sum, min, max float64
}

// meter aggregates the histograms in memory and sends them with its own
// OTLP/HTTP exporter (the traces' exporter, for metrics: otlp.go), every
// interval and when it shuts down. It is fsd's own rather than the
// OpenTelemetry metric SDK for the reason the span exporter is: two
// instruments do not need it, and its exporters bring gRPC.
type meter struct {
	res   *resource.Resource
	exp   *exporter
	start time.Time
	now   func() time.Time

	mu     sync.Mutex
	points map[*instrument][]*point // in the order first recorded

	stop chan struct{}
	done chan struct{}
}

// exportInterval is OTEL_METRIC_EXPORT_INTERVAL (milliseconds; default
// 60 s, as the OTel specification says).
func exportInterval(getenv func(string) string) (time.Duration, error) {
	v := strings.TrimSpace(getenv("OTEL_METRIC_EXPORT_INTERVAL"))
	if v == "" {
		return time.Minute, nil
	}
	ms, err := strconv.Atoi(v)
	if err != nil || ms <= 0 {
		return 0, errors.New("OTEL_METRIC_EXPORT_INTERVAL=" + v + ": want milliseconds, e.g. 60000")
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// newMeter starts a meter that exports every interval until shutdown.
func newMeter(res *resource.Resource, exp *exporter, interval time.Duration) *meter {
	m := &meter{res: res, exp: exp, start: time.Now(), now: time.Now, points: map[*instrument][]*point{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
				// A failed periodic export is retried by the next one:
				// the data points are cumulative.
				ctx, cancel := context.WithTimeout(context.Background(), interval)
				_ = m.flush(ctx)
				cancel()
			}
		}
	}()
	return m
}

// record adds v to in's histogram for attrs.
//
// O5: the GenAI histograms, as the conventions give them.
func (m *meter) record(in *instrument, v float64, attrs ...attribute.KeyValue) {
	set := attribute.NewSet(attrs...)
	m.mu.Lock()
	defer m.mu.Unlock()
	var p *point
	for _, q := range m.points[in] {
		if q.attrs.Equals(&set) {
			p = q
			break
		}
	}
	if p == nil {
		p = &point{attrs: set, buckets: make([]uint64, len(in.bounds)+1), min: v, max: v}
		m.points[in] = append(m.points[in], p)
	}
	i, _ := slices.BinarySearch(in.bounds, v) // the first bound >= v
	p.buckets[i]++
	p.count++
	p.sum += v
	p.min, p.max = min(p.min, v), max(p.max, v)
}

// flush sends every histogram as it stands; nothing recorded, nothing sent.
func (m *meter) flush(ctx context.Context) error {
	body := m.encode(nil)
	if body == nil {
		return nil
	}
	return m.exp.export(ctx, body)
}

// shutdown stops the periodic exports and sends the last one.
func (m *meter) shutdown(ctx context.Context) error {
	select {
	case <-m.stop:
		return nil
	default:
		close(m.stop)
	}
	<-m.done
	err := m.flush(ctx)
	_ = m.exp.Shutdown(ctx)
	return err
}

// Field numbers of opentelemetry-proto v1's metrics (metrics/v1/
// metrics.proto); TestMetricsDecodeWithTheOTLPTypes decodes the output
// with the official generated types.
const (
	reqResourceMetrics = 1 // ExportMetricsServiceRequest

	rmResource     = 1 // ResourceMetrics
	rmScopeMetrics = 2

	smScope   = 1 // ScopeMetrics
	smMetrics = 2
	smSchema  = 3

	metricName        = 1 // Metric
	metricDescription = 2
	metricUnit        = 3
	metricHistogram   = 9

	histDataPoints  = 1 // Histogram
	histTemporality = 2

	hpStart      = 2 // HistogramDataPoint
	hpTime       = 3
	hpCount      = 4
	hpSum        = 5
	hpBuckets    = 6
	hpBounds     = 7
	hpAttributes = 9
	hpMin        = 11
	hpMax        = 12

	cumulative = 2 // AggregationTemporality
)

// encode appends an ExportMetricsServiceRequest holding every histogram
// to b; nil when nothing was recorded.
func (m *meter) encode(b []byte) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.points) == 0 {
		return nil
	}
	now := unixNano(m.now().UnixNano())
	start := unixNano(m.start.UnixNano())
	return appendMessage(b, reqResourceMetrics, func(b []byte) []byte {
		b = appendMessage(b, rmResource, func(b []byte) []byte {
			return appendAttributes(b, resAttributes, m.res.Attributes())
		})
		return appendMessage(b, rmScopeMetrics, func(b []byte) []byte {
			b = appendMessage(b, smScope, func(b []byte) []byte { return appendString(b, scopeName, scope) })
			for _, in := range []*instrument{tokenUsage, opDuration} {
				points := m.points[in]
				if len(points) == 0 {
					continue
				}
				b = appendMessage(b, smMetrics, func(b []byte) []byte {
					b = appendString(b, metricName, in.name)
					b = appendString(b, metricDescription, in.desc)
					b = appendString(b, metricUnit, in.unit)
					return appendMessage(b, metricHistogram, func(b []byte) []byte {
						for _, p := range points {
							b = appendMessage(b, histDataPoints, func(b []byte) []byte { return appendPoint(b, in, p, start, now) })
						}
						return appendVarint(b, histTemporality, cumulative)
					})
				})
			}
			return appendString(b, smSchema, schemaURL)
		})
	})
}

func appendPoint(b []byte, in *instrument, p *point, start, now uint64) []byte {
	b = appendFixed64(b, hpStart, start)
	b = appendFixed64(b, hpTime, now)
	b = appendFixed64(b, hpCount, p.count)
	b = appendDouble(b, hpSum, p.sum)
	b = appendMessage(b, hpBuckets, func(b []byte) []byte { // packed
		for _, c := range p.buckets {
			b = appendRawFixed64(b, c)
		}
		return b
	})
	b = appendMessage(b, hpBounds, func(b []byte) []byte {
		for _, v := range in.bounds {
			b = appendRawFixed64(b, math.Float64bits(v))
		}
		return b
	})
	b = appendAttributes(b, hpAttributes, p.attrs.ToSlice())
	b = appendDouble(b, hpMin, p.min)
	return appendDouble(b, hpMax, p.max)
}

// appendDouble writes an optional double: present even when zero.
func appendDouble(b []byte, num number, v float64) []byte {
	b = appendTag(b, num, fixed64Type)
	return appendRawFixed64(b, math.Float64bits(v))
}
