// Package model is the seam between fsd's generators and language models:
// the messages, tool definitions, requests and responses every provider
// speaks, and the Model interface a generator calls once per step.
//
// It holds no provider code. The scripted model lives in model/scripted and
// the real providers in their own subpackages; each maps these types to its
// wire format and back.
package model
