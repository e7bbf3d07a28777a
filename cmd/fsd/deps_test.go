package main

import (
	"os/exec"
	"strings"
	"testing"
)

// heavyDeps are packages the binary must not link: each cost seconds of
// every cold build (and megabytes of binary) for code fsd never runs.
// bench/build.sh measures what is left; docs/design.md has the figures.
var heavyDeps = map[string]string{
	"google.golang.org/grpc":                 "gRPC (came with the OTLP collector package; fsd exports OTLP over HTTP)",
	"github.com/grpc-ecosystem/grpc-gateway": "grpc-gateway (same)",
	"go.opentelemetry.io/proto/otlp":         "the generated OTLP types (telemetry writes the wire format with protowire)",
	"google.golang.org/protobuf/proto":       "the protobuf runtime (same)",
	"golang.org/x/net/http2":                 "x/net's HTTP/2 (gRPC's transport; net/http has its own)",
	"github.com/tiktoken-go/tokenizer":       "four vocabularies as Go literals (tokens embeds o200k_base as a table)",
	"github.com/dlclark/regexp2":             "a backtracking regexp engine (tokens splits text by hand)",
}

// startDeps (I4) are packages (these alone, not those under them) the
// binary must not link because their initialisation, which every fsd
// process runs before it reads a flag, does work no command needs.
var startDeps = map[string]string{
	"google.golang.org/protobuf/internal/detrand": "it opens and reads the fsd binary to seed itself (telemetry writes the protobuf wire format itself)",
	"encoding/xml": "it builds its HTML entity and auto-close tables (eval writes its JUnit XML itself)",
}

// The binary's import graph stays free of the heavy packages it shed and
// of those whose initialisation is dear.
func TestBinaryLeavesOutHeavyDependencies(t *testing.T) {
	t.Parallel()
	for _, pkg := range linkedPackages(t) {
		for heavy, why := range heavyDeps {
			if pkg == heavy || strings.HasPrefix(pkg, heavy+"/") {
				t.Errorf("fsd links %s: %s", pkg, why)
			}
		}
	}
}

// linkedPackages lists the packages the fsd binary links (go list -deps),
// not those only its tests do; it skips t without a go command.
func linkedPackages(t *testing.T) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to list the binary's packages")
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}
