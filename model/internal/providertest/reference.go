package providertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
)

// Reference is a response file under the package's testdata/reference,
// shaped like an example of the provider's published reference, and what
// it parses to: Want, or an error whose text is WantErr.
type Reference struct {
	File    string
	Want    *model.Response
	WantErr string
}

// References answers Request with each file — one ending in .sse as a
// stream, dribbled in small chunks — and checks the answer.
func (p Provider) References(t *testing.T, refs []Reference) {
	for _, tt := range refs {
		t.Run(tt.File, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", "reference", tt.File))
			if err != nil {
				t.Fatal(err)
			}
			reply, req := fakeserver.Reply{Body: string(body)}, p.Request()
			if strings.HasSuffix(tt.File, ".sse") {
				reply.Header, reply.Chunked = SSE, true
				req.OnText = func(string) {}
			}
			srv := fakeserver.New(reply)
			defer srv.Close()
			got, err := p.Model(t, srv).Generate(t.Context(), req)
			if tt.WantErr != "" {
				if err == nil || err.Error() != tt.WantErr {
					t.Fatalf("err = %v, want %q", err, tt.WantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.Want, got, IgnoreServer); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
