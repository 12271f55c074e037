package middleware

import "github.com/gin-gonic/gin"

// GrowStack gives each request's goroutine, before anything else runs, the
// stack the rest of the chain needs, in one step where it is cheap.
//
// A goroutine starts with a small stack (2 KB, or the recent average) and
// the runtime doubles it whenever a call would not fit, copying the stack
// and adjusting every frame on it: the deeper the call, the dearer the
// copy. A request through this chain (the middleware, the handler, the
// cache's read and the answer's JSON and access line) needs more than a
// fresh goroutine has, so each connection of a burst of new clients paid
// two or three copies deep in the chain (and so can a keep-alive
// connection whose stack the GC shrank while it sat idle). Reserving the
// room here, where the stack is shallow, makes it one copy of a few
// frames; on a goroutine whose stack is already large it costs a call
// (about 2 ns: the frame is never written, see reserveStack). CockroachDB
// does the same (pkg/util/growstack). Measured in the refusal burst:
// docs/benchmarks.md, "stack growth at the door".
func GrowStack() gin.HandlerFunc {
	return func(c *gin.Context) {
		reserveStack(c == nil) // never true: see reserveStack
		c.Next()
	}
}

// stackReserve is reserveStack's frame: with the ~2 KB of net/http and gin
// below it, the stack doubles to 16 KB at once, enough for the chain. A
// 16 KB frame (32 KB stacks) measured no faster.
const stackReserve = 8 << 10

// reserveStack has a frame of stackReserve bytes, so calling it makes the
// runtime grow the stack to hold it; the room stays after it returns.
//
// The frame is sized for the whole function, but Go zeroes an array only
// where it is declared: inside a branch that never runs, it is never
// written. Declared at the top, it was zeroed on every request, 8 KB of
// stack the caches had not seen since the connection's last request:
// about 2 % of a hot read's CPU in a profile of the hot-key lab.
// BenchmarkGrowStack measures the call; TestGrowStackReservesRoomAtTheDoor
// fails if a compiler ever drops the frame with the branch.
//
//go:noinline
func reserveStack(touch bool) {
	if touch {
		var frame [stackReserve]byte
		touchFrame(frame[:])
	}
}

// touchFrame keeps the frame from being optimised away; it does not let it
// escape, so the array stays on the stack.
//
//go:noinline
func touchFrame(b []byte) { b[0] = 1 }
