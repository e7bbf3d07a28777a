package model

import "testing"

func TestRequestBound(t *testing.T) {
	for _, tc := range []struct{ req, configured, want int }{
		{0, 0, 0}, {0, 8192, 8192}, {100, 0, 100}, {100, 8192, 100}, {9000, 8192, 8192}, {-1, -1, 0},
	} {
		if got := (&Request{MaxTokens: tc.req}).Bound(tc.configured); got != tc.want {
			t.Errorf("Request{MaxTokens: %d}.Bound(%d) = %d, want %d", tc.req, tc.configured, got, tc.want)
		}
	}
}
