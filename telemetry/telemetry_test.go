package telemetry_test

import (
	"context"
	"testing"

	"github.com/fsdrun/fsd/telemetry"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// Tracing is on only when the standard OTel environment asks for it; off,
// Setup builds nothing and the engine gets a nil observer (no cost).
func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"unset", nil, false},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318"}, true},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://localhost:4318/v1/traces"}, true},
		{"sdk disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "true"}, false},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := telemetry.Enabled(env(tc.env)); got != tc.want {
				t.Errorf("Enabled = %v, want %v", got, tc.want)
			}
		})
	}
	obs, shutdown, err := telemetry.Setup(context.Background(), env(nil), telemetry.Options{})
	if err != nil || obs != nil || shutdown(context.Background()) != nil {
		t.Errorf("Setup without an endpoint: observer %v, err %v", obs, err)
	}
}
