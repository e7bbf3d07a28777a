// Package deps pins the project's dependencies in go.mod while packages
// that use them are being written. Remove once every one is imported for real.
package deps

import (
	_ "github.com/anthropics/anthropic-sdk-go"
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/openai/openai-go/v3"
	_ "github.com/rs/zerolog"
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "github.com/tiktoken-go/tokenizer"
	_ "github.com/yuin/goldmark"
	_ "go.yaml.in/yaml/v4"
	_ "golang.org/x/sync/errgroup"
	_ "golang.org/x/term"
)
