// Package gzipcat writes one gzip member (RFC 1952) assembled from raw
// DEFLATE segments compressed apart, ahead of time, and runs of bytes
// compressed as they are written: a response made mostly of bodies that
// were compressed once and are reused as they are. Every segment and run
// ends byte-aligned without a final block, so their concatenation is one
// DEFLATE stream; the member's CRC-32 is combined from the segments' CRCs
// without reading their bytes.
//
// It knows nothing of what the bytes mean: package scrape decides which bodies
// get a segment and when.
package gzipcat
