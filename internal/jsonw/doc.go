// Package jsonw appends JSON without reflection, for the run record's hot
// lines (events, requests, board.json), byte for byte what encoding/json
// writes for the same value: strings escaped as json.Marshal escapes them
// (HTML characters and U+2028/U+2029 included, invalid UTF-8 as U+FFFD),
// times as RFC 3339 with nanoseconds, floats in json's shortest form.
//
// A type's hand-written appender must stay equal to json.Marshal as the
// type grows: Matches fills every field of a value with a distinctive
// non-zero value (Fill) and compares the two encodings, so a caller checks
// its appender once at start and falls back to json.Marshal when a field
// was added that the appender does not know, and its test fails.
//
// Its readers (Object, ReadString, ReadInt…) take back that same form and
// decode it as json.Unmarshal would, refusing anything else: a decoder
// built from them hands whatever they refuse to json.Unmarshal, so it is
// never wrong, only sometimes no faster. CompareDecode fuzzes such a
// decoder against json.Unmarshal.
//
// It is not a general encoder or decoder: each type writes its own
// appender and decoder from these pieces.
package jsonw
