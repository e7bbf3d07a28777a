package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// exporter sends spans to an OTLP/HTTP collector as binary protobuf
// (http/protobuf), configured by the standard OTEL_EXPORTER_OTLP_*
// variables. It is fsd's own rather than otlptracehttp because that one
// imports the OTLP collector package, and with it gRPC and grpc-gateway,
// which an HTTP exporter never runs; see
// docs/design.md for the build figures.
type exporter struct {
	sig      signal
	url      string // the signal's URL, as given or built from the base endpoint
	headers  map[string]string
	timeout  time.Duration // for one export, retries included
	gzip     bool
	client   *http.Client
	backoff  time.Duration // first wait before a retry; doubles, jittered
	shutdown atomic.Bool
}

// Retry waits: the first and the longest. The export's timeout bounds
// them all.
const (
	retryFirst = 500 * time.Millisecond
	retryMax   = 5 * time.Second
	maxBody    = 64 << 10 // of a response read for its status or partial success
)

// signal is what an exporter sends: traces or metrics, each with its own
// variables (OTEL_EXPORTER_OTLP_TRACES_*), path and items.
type signal struct {
	env, path, items string
}

var (
	traces  = signal{env: "TRACES", path: "/v1/traces", items: "spans"}
	metrics = signal{env: "METRICS", path: "/v1/metrics", items: "data points"}
)

// newExporter reads the OTLP exporter variables of traces: see
// newSignalExporter.
func newExporter(getenv func(string) string) (*exporter, error) {
	return newSignalExporter(getenv, traces)
}

// newSignalExporter reads the OTLP exporter variables of sig: the
// signal-specific one wins over the general one, as the OTel
// specification says.
//
// S4: a header's value is never in an error.
func newSignalExporter(getenv func(string) string, sig signal) (*exporter, error) {
	own := "OTEL_EXPORTER_OTLP_" + sig.env + "_"
	get := func(name string) (string, string) {
		if v := strings.TrimSpace(getenv(own + name)); v != "" {
			return v, own + name
		}
		return strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + name)), "OTEL_EXPORTER_OTLP_" + name
	}
	e := &exporter{sig: sig, timeout: 10 * time.Second, backoff: retryFirst, headers: map[string]string{}}

	if p, name := get("PROTOCOL"); p != "" && p != "http/protobuf" {
		return nil, fmt.Errorf("%s=%s: fsd exports %s over OTLP/HTTP with protobuf only (http/protobuf)", name, p, strings.ToLower(sig.env))
	}
	if v := strings.TrimSpace(getenv(own + "ENDPOINT")); v != "" {
		// A signal's own endpoint is the URL as it is.
		u, err := parseEndpoint(v, own+"ENDPOINT")
		if err != nil {
			return nil, err
		}
		if u.Path == "" {
			u.Path = "/"
		}
		e.url = u.String()
	} else {
		v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
		if v == "" {
			v = "http://localhost:4318"
		}
		u, err := parseEndpoint(v, "OTEL_EXPORTER_OTLP_ENDPOINT")
		if err != nil {
			return nil, err
		}
		// The general endpoint is a base: traces go to /v1/traces under
		// it, metrics to /v1/metrics.
		u.Path = strings.TrimSuffix(u.Path, "/") + sig.path
		e.url = u.String()
	}
	if v, name := get("HEADERS"); v != "" {
		for pair := range strings.SplitSeq(v, ",") {
			k, val, ok := strings.Cut(pair, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				// The value may be a secret: name the key only.
				return nil, fmt.Errorf("%s: %q is not key=value", name, k)
			}
			dv, err := url.PathUnescape(strings.TrimSpace(val))
			if err != nil {
				return nil, fmt.Errorf("%s: the value of %q is not URL-encoded", name, k)
			}
			e.headers[k] = dv
		}
	}
	if v, name := get("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("%s=%s: want milliseconds, e.g. 10000", name, v)
		}
		e.timeout = time.Duration(ms) * time.Millisecond
	}
	switch v, name := get("COMPRESSION"); v {
	case "", "none":
	case "gzip":
		e.gzip = true
	default:
		return nil, fmt.Errorf("%s=%s: want gzip or none", name, v)
	}
	tlsConf, err := tlsConfig(get)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if tlsConf != nil {
		tr.TLSClientConfig = tlsConf
	}
	e.client = &http.Client{Transport: tr}
	return e, nil
}

func parseEndpoint(v, name string) (*url.URL, error) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s=%s: want an http:// or https:// URL, e.g. http://localhost:4318", name, withoutPassword(v))
	}
	return u, nil
}

// tlsConfig reads the CA certificate and the client certificate and key
// files, when given.
func tlsConfig(get func(string) (string, string)) (*tls.Config, error) {
	ca, caName := get("CERTIFICATE")
	cert, certName := get("CLIENT_CERTIFICATE")
	key, keyName := get("CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", caName, err)
		}
		conf.RootCAs = x509.NewCertPool()
		if !conf.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: %s holds no PEM certificate", caName, ca)
		}
	}
	if cert != "" || key != "" {
		if cert == "" || key == "" {
			return nil, fmt.Errorf("%s and %s go together", certName, keyName)
		}
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("%s, %s: %w", certName, keyName, err)
		}
		conf.Certificates = []tls.Certificate{pair}
	}
	return conf, nil
}

// withoutPassword drops a URL's password, if any, from a message.
func withoutPassword(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "the URL"
}

// ExportSpans sends one request; the SDK's batch processor calls it from
// one goroutine at a time.
func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.shutdown.Load() || len(spans) == 0 {
		return nil
	}
	return e.export(ctx, encodeRequest(nil, spans))
}

// export sends one request's body, retrying what is worth a retry within
// the export's timeout.
func (e *exporter) export(ctx context.Context, body []byte) error {
	if e.gzip {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(body)
		_ = zw.Close()
		body = buf.Bytes()
	}
	if e.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.timeout)
		defer cancel()
	}
	wait := e.backoff
	for {
		retry, after, err := e.send(ctx, body)
		if err == nil || !retry {
			return err
		}
		// Exponential backoff with full jitter, or the server's word.
		d := time.Duration(rand.Int64N(int64(wait)) + 1)
		if after > 0 {
			d = after
		}
		wait = min(2*wait, retryMax)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (last try: %v)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// send makes one attempt. It reports whether the failure is worth a
// retry (the collector is busy or a network error), and how long the
// server asked to wait.
func (e *exporter) send(ctx context.Context, body []byte) (retry bool, after time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return false, 0, err
	}
	for k, v := range e.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", "fsd OTLP/HTTP exporter")
	if e.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return false, 0, err
		}
		return true, 0, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody)) // let the connection be reused
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		if n, msg := partialSuccess(data); n > 0 || msg != "" {
			return false, 0, fmt.Errorf("the collector at %s rejected %d %s: %s", withoutPassword(e.url), n, e.sig.items, msg)
		}
		return false, 0, nil
	case code == http.StatusTooManyRequests || code == http.StatusBadGateway ||
		code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout:
		after := time.Duration(0)
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
			after = min(time.Duration(s)*time.Second, retryMax)
		}
		return true, after, e.statusError(resp, data)
	default:
		return false, 0, e.statusError(resp, data)
	}
}

func (e *exporter) statusError(resp *http.Response, body []byte) error {
	msg := ""
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-protobuf") {
		msg = statusMessageOf(body)
	} else if len(body) > 0 && len(body) < 512 {
		msg = strings.TrimSpace(string(body))
	}
	if msg != "" {
		msg = ": " + msg
	}
	return fmt.Errorf("OTLP export to %s: %s%s", withoutPassword(e.url), resp.Status, msg)
}

// Shutdown stops further exports; the batch processor has flushed by then.
func (e *exporter) Shutdown(ctx context.Context) error {
	e.shutdown.Store(true)
	e.client.CloseIdleConnections()
	return ctx.Err()
}
