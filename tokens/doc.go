// Package tokens counts tokens the way a current model's tokenizer does:
// byte-pair encoding with the o200k_base vocabulary, embedded in the binary
// so counting works offline.
//
// It is its own small implementation of tiktoken's o200k_base: the
// vocabulary is a hash table generated from OpenAI's o200k_base.tiktoken
// (internal/vocabgen) and read in place from the binary, so a process
// pays nothing to load it; text is split into pieces by a hand-written
// matcher of tiktoken's pattern (split.go) and each piece is merged as
// tiktoken merges it (bpe.go). Counts equal tiktoken's
// (TestCountMatchesTiktoken), the table is OpenAI's byte for byte
// (TestVocabularyIsOpenAIs), and the splitter is fuzzed against the
// pattern run by Go's regexp (FuzzPieces).
//
// Two bounds keep a count's cost linear in the text and capped, at the
// price of exactness where it does not matter: a run of more than 2 KiB
// without a space (one piece to the pattern) is merged in chunks, about
// one token off per chunk (TestChunkedCountNearExact), and a text over
// MaxExact (256 KiB) is counted exactly that far and estimated beyond
// (TestCountEstimatesBeyondMaxExact). So a 100 MB answer without a space
// costs what 256 KiB of it does, not minutes and gigabytes
// (TestCountLongRunMemory, BenchmarkCount).
//
// Every token count fsd reports (request sizes, artifact_read get=size,
// the context command) goes through Count, so the numbers agree with each
// other. It is not a billing meter: providers may count framing tokens this
// package does not see. It does not encode or decode token ids either.
package tokens
