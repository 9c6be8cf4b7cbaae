// Package journal is pushgate's durable storage: an append-only log of key
// changes in one file, with CRC32C-checked records and group commit.
//
// Figures and reasons: see the end of this comment (filled in from
// BenchmarkDurableSet and BenchmarkBboltBatch).
package journal
