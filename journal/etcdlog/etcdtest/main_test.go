package etcdtest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test leaves goroutines behind: every Log,
// Follow, proxy and etcd member a test starts must be stopped by its
// cleanup. An embedded member's HTTP connections (client API and peer
// transport) finish closing on their own a while after it stopped; they are
// etcd's, and the Log speaks only gRPC.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("net/http.(*conn).serve"),
		goleak.IgnoreAnyFunction("net/http.(*connReader).backgroundRead"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
	)
}
