package natsboard

import (
	"testing"
)

// The record's copy of a workflow keeps no NATS credential from
// board.nats: each URL spelled out in the text is replaced by its
// redacted form, and a file where the secret is still there after that
// (written with YAML escapes) is not copied at all.
func TestWithoutCredentials(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, nats, src, want string
		ok                    bool
	}{
		{"none", "nats://h:4222", "board: {nats: nats://h:4222}\n", "board: {nats: nats://h:4222}\n", true},
		{"password", "nats://fsd:s3cret@h:4222", "name: fsd\nboard: {nats: \"nats://fsd:s3cret@h:4222\"}\n",
			"name: fsd\nboard: {nats: \"nats://REDACTED@h:4222\"}\n", true},
		{"token in a list", "nats://a:4222, tok3n@b:4222", "board:\n  nats: nats://a:4222, tok3n@b:4222\n",
			"board:\n  nats: nats://a:4222, REDACTED@b:4222\n", true},
		{"escaped", "nats://fsd:s3cret@h:4222", "board: {nats: \"nats://fsd:s3\\x63ret@h:4222\"}\n", "", false},
		{"also elsewhere", "nats://fsd:s3cret@h:4222", "board: {nats: \"nats://fsd:s3cret@h:4222\"} # s3cret\n", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := withoutCredentials([]byte(tc.src), tc.nats)
			if ok != tc.ok || string(got) != tc.want {
				t.Errorf("got %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
