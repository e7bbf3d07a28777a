// Package tokens counts tokens the way a current model's tokenizer does:
// byte-pair encoding with the o200k_base vocabulary, embedded in the binary
// so counting works offline.
//
// Every token count fsd reports (request sizes, artifact_read get=size,
// the context command) goes through Count, so the numbers agree with each
// other. It is not a billing meter: providers may count framing tokens this
// package does not see. It does not encode or decode token ids either.
package tokens
