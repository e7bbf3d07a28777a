package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsdrun/fsd/model"
)

// short is a two-step turn: read skill aa, then answer.
var short = model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == model.User {
		return &model.Response{Calls: []model.ToolCall{{ID: "c1", Name: "read_skill", Args: json.RawMessage(`{"id":"aa"}`)}}}, nil
	}
	return &model.Response{Text: "done"}, nil
})

// BenchmarkConcurrentSessions runs 100 sessions at once, each one turn
// of a short workflow (a skill read, an answer) through the HTTP API:
// the latency of a turn is from its POST to the end of its event
// stream. It reports p50 and p99 of that, and the heap in use and the
// memory the process got from the system once they are done.
func BenchmarkConcurrentSessions(b *testing.B) {
	const sessions = 100
	p, dir := project(b)
	_, hs := newServer(b, p, dir, short)
	http.DefaultTransport.(*http.Transport).MaxIdleConnsPerHost = 2 * sessions
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for s := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := fmt.Sprintf("b%d-%d", i, s)
				start := time.Now()
				resp, err := http.Post(hs.URL+"/sessions", "application/json", strings.NewReader(`{"id":"`+id+`","message":"go"}`))
				if err != nil || resp.StatusCode != http.StatusCreated {
					b.Errorf("create %s: %v %v", id, err, resp)
					return
				}
				resp.Body.Close()
				ev, err := http.Get(hs.URL + "/sessions/" + id + "/events")
				if err != nil {
					b.Error(err)
					return
				}
				sc := bufio.NewScanner(ev.Body)
				sc.Buffer(nil, 1<<20)
				for sc.Scan() && sc.Text() != "event: end" {
				}
				ev.Body.Close()
				mu.Lock()
				lat = append(lat, time.Since(start))
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	slices.Sort(lat)
	if len(lat) == 0 {
		return
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms/turn")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms/turn")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(ms.Sys)/(1<<20), "sys-MiB")
}
