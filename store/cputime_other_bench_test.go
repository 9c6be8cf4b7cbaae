//go:build !unix

package store

import "testing"

// reportCPUPerOp reports nothing where the process's CPU time is not read.
func reportCPUPerOp(*testing.B) (stop func()) { return func() {} }
