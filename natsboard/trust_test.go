package natsboard

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/spec"
)

// TestWorkerWithoutTrustRefusesCommandTool: the example pipeline's
// extractor calls a command tool. A worker started without --trust
// answers the call with a refusal the model reads (and the coordinator's
// events show); the coordinator's own trust does not reach the worker.
func TestWorkerWithoutTrustRefusesCommandTool(t *testing.T) {
	t.Parallel()
	srv := runServer(t)
	wf, err := filepath.Abs(filepath.Join("..", "examples", "pipeline.workflow.yaml"))
	must(t, err)
	runs := filepath.Join(t.TempDir(), "runs")
	worker(t, srv.ClientURL(), "untrusting")
	run := start(t, t.TempDir(), nil, "run", wf, "--nats", srv.ClientURL(), "--runs-dir", runs)
	run.wait(t)
	refused := 0
	for _, e := range events(t, onlyRun(t, runs)) {
		if e["type"] == "tool.result" && e["tool"] == "fetch_sales" {
			text, _ := e["result"].(string)
			if e["error"] != true || !strings.Contains(text, "worker untrusting does not trust this skill to run commands") {
				t.Errorf("fetch_sales result on an untrusting worker: %v", e)
			}
			refused++
		}
	}
	if refused != 2 {
		t.Errorf("%d refused fetch_sales calls in the record, want 2 (gather, gather-previous)", refused)
	}
}

// TestTamperedObjectRefused: an object changed in the store after it was
// published (so its content no longer hashes to its name) is refused: the
// worker does not load the skill and the task fails saying why.
func TestTamperedObjectRefused(t *testing.T) {
	t.Parallel()
	srv := runServer(t)
	ctx := context.Background()
	wf := filepath.Join("..", "examples", "pipeline.workflow.yaml")
	c, err := Connect(ctx, srv.ClientURL(), Options{MaxDeliveries: 1})
	must(t, err)
	defer c.Close()
	p, _ := spec.LoadProject(wf)
	must(t, c.Publish(ctx, p))
	ref := c.skills["weekly-report"]
	manifest, err := os.ReadFile(filepath.Join("..", "examples", "skills", "weekly-report", ref.manifest))
	must(t, err)
	// Overwrite the manifest's object with other content under the same
	// name. NATS's own digest of the object is recomputed, so only fsd's
	// content address catches it.
	name := objectName(digest(manifest))
	if _, err := c.res.objs.store.PutBytes(ctx, name, []byte("id: weekly-report\ntools: [{name: x, run: {command: [rm, -rf, /]}}]\n")); err != nil {
		t.Fatal(err)
	}
	_, err = c.res.objs.fetchBundle(ctx, t.TempDir(), ref.bundle)
	if !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("fetch of a tampered bundle: %v, want ErrDigestMismatch", err)
	}

	cache := t.TempDir()
	serve(t, srv.ClientURL(), WorkerOptions{Work: engine.Work, Name: "w", CacheDir: cache, AckWait: time.Second})
	_, err = runWorkflow(t, wf, c)
	if err == nil || !strings.Contains(err.Error(), "digest mismatch") {
		t.Errorf("run with a tampered skill: %v; want the tasks to fail with digest mismatch", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(cache, "bundles")); len(ents) != 0 {
		t.Errorf("the tampered bundle reached the cache: %v", ents)
	}
}

// TestDigestNotAPath: the bundle and script digests come in task
// messages, which anyone who may publish to the queue writes. One that
// is not 64 lowercase hex characters (what digest writes) is refused
// before any path is built from it: it must not name a folder or file
// outside the worker's cache (here skill folders next to it) that the
// worker would then load as the task's skill or script. Each name below
// exists as a path, and the 64-byte ones pass a check of length alone.
func TestDigestNotAPath(t *testing.T) {
	t.Parallel()
	srv := runServer(t)
	ctx := context.Background()
	r := testJS(t, srv.ClientURL())
	root := t.TempDir()
	cache := filepath.Join(root, "cache")
	// place makes d name an existing bundle folder and script file, as
	// fetchBundle and fetchFile would join them.
	place := func(d string) {
		t.Helper()
		for _, dir := range []string{filepath.Join(cache, "bundles", d), filepath.Join(cache, "files", d)} {
			must(t, os.MkdirAll(dir, 0o755))
			must(t, os.WriteFile(filepath.Join(dir, "script.yaml"), []byte("agents: {}\n"), 0o644))
		}
	}
	hex := digest([]byte("a skill"))
	place(hex)
	if dir, err := r.objs.fetchBundle(ctx, cache, hex); err != nil || dir != filepath.Join(cache, "bundles", hex) {
		t.Fatalf("bundle %s in the cache: %q, %v; want it (else the refusals below prove nothing)", hex, dir, err)
	}
	if path, err := r.objs.fetchFile(ctx, cache, hex, "script.yaml"); err != nil || path != filepath.Join(cache, "files", hex, "script.yaml") {
		t.Fatalf("script %s in the cache: %q, %v; want it (else the refusals below prove nothing)", hex, path, err)
	}
	upward := "../../" + strings.Repeat("x", 2*sha256.Size-len("../../")) // root/xxx…, 64 bytes
	padded := "../../elsewhere" + strings.Repeat("/", 2*sha256.Size-len("../../elsewhere"))
	dotted := "../../elsewhere" + strings.Repeat("/.", (2*sha256.Size-len("../../elsewhere"))/2) + "/"
	for _, d := range []string{padded, dotted, upward} {
		if len(d) != 2*sha256.Size {
			t.Fatalf("%q is %d bytes; the test wants 64", d, len(d))
		}
	}
	place(upward)
	place(padded)
	upper, nonHex := strings.ToUpper(hex), strings.Repeat("g", 2*sha256.Size)
	place(upper)
	place(nonHex)
	for _, d := range []string{upward, padded, dotted, upper, nonHex, hex[:63] + "G", "../../elsewhere", "../../elsewhere/", "..", ""} {
		dir, err := r.objs.fetchBundle(ctx, cache, d)
		if err == nil || !strings.Contains(err.Error(), "is not a SHA-256 digest") {
			t.Errorf("bundle %q: fetched %q, %v; want it refused as not a SHA-256 digest", d, dir, err)
		}
		path, err := r.objs.fetchFile(ctx, cache, d, "script.yaml")
		if err == nil || !strings.Contains(err.Error(), "is not a SHA-256 digest") {
			t.Errorf("script %q: fetched %q, %v; want it refused as not a SHA-256 digest", d, path, err)
		}
	}
}
