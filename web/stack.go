package web

// pushStackReserve is the stack a push grows to at once, before it starts:
// a goroutine of a new connection starts with a small stack, and a push
// decoding, rendering and storing a 74-sample body outgrew it two or three
// times on the way, each time copying the whole stack. With a connection
// per push (the batch job's case) that stack growth was 4.7% of the
// gateway's CPU.
const pushStackReserve = 16 << 10

// reserveStack makes the calling goroutine's stack large enough for a push
// while it is still shallow, so that it grows once and copies little.
func reserveStack() {
	var pad [pushStackReserve]byte
	touchStack(pad[:])
}

// touchStack keeps reserveStack's frame from being optimised away.
//
//go:noinline
func touchStack(b []byte) { b[len(b)-1] = 0 }
