// Command vocabgen turns OpenAI's o200k_base.tiktoken (one base64 token
// and its rank per line, ranks 0…n-1 in order) into the table package
// tokens embeds, so that counting needs no parsing at start-up:
//
//	curl -O https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken
//	go run ./tokens/internal/vocabgen o200k_base.tiktoken tokens/o200k_base.bin
//
// The layout (all integers little-endian uint32) is described in
// tokens/vocab.go; slots are found by FNV-1a (32 bit) and linear probing. tokens.TestVocabularyIsOpenAIs rebuilds the .tiktoken
// text from the table and checks its SHA-256 against the one OpenAI
// publishes, so a table that differs in any token or rank fails the tests.
package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: vocabgen IN.tiktoken OUT.bin")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "vocabgen:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	var toks [][]byte
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		tok, rank, ok := bytes.Cut(sc.Bytes(), []byte(" "))
		if !ok {
			return fmt.Errorf("%s:%d: want BASE64 RANK", in, line)
		}
		b, err := base64.StdEncoding.DecodeString(string(tok))
		if err != nil {
			return fmt.Errorf("%s:%d: %v", in, line, err)
		}
		if r, err := strconv.Atoi(string(rank)); err != nil || r != len(toks) {
			return fmt.Errorf("%s:%d: rank %s, want %d (ranks in order)", in, line, rank, len(toks))
		}
		toks = append(toks, b)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return os.WriteFile(out, build(toks), 0o644)
}

func build(toks [][]byte) []byte {
	slots := 1
	for slots < 2*len(toks) {
		slots *= 2
	}
	table := make([]uint32, slots)
	off := make([]uint32, 0, len(toks)+1)
	var data []byte
	for r, t := range toks {
		off = append(off, uint32(len(data)))
		data = append(data, t...)
		h := fnv.New32a()
		h.Write(t)
		i := h.Sum32() & uint32(slots-1)
		for table[i] != 0 {
			i = (i + 1) & uint32(slots-1)
		}
		table[i] = uint32(r) + 1
	}
	off = append(off, uint32(len(data)))
	var buf bytes.Buffer
	w := func(v any) { _ = binary.Write(&buf, binary.LittleEndian, v) }
	w(uint32(len(toks)))
	w(uint32(slots))
	w(off)
	w(table)
	buf.Write(data)
	return buf.Bytes()
}
