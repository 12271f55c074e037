package db

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestKeySlotsBoundOneKeyAndForgetIt: a key lets keyConns callers through
// at once; the next one waits, is refused with ErrKeyBusy when no place
// frees in time, and is let through when one does; another key is not
// held up; and a key nobody uses any more leaves nothing behind.
func TestKeySlotsBoundOneKeyAndForgetIt(t *testing.T) {
	var k keySlots
	ctx := context.Background()
	const wait = 50 * time.Millisecond
	var leaves []func()
	for i := range keyConns {
		leave, err := k.take(ctx, 1, wait)
		if err != nil {
			t.Fatalf("place %d of key 1: %v", i, err)
		}
		leaves = append(leaves, leave)
	}
	if _, err := k.take(ctx, 1, wait); !errors.Is(err, ErrKeyBusy) {
		t.Fatalf("place %d of key 1: %v, want ErrKeyBusy", keyConns+1, err)
	}
	other, err := k.take(ctx, 2, wait)
	if err != nil {
		t.Fatalf("key 2 while key 1 is full: %v", err)
	}
	other()
	freed := make(chan struct{})
	time.AfterFunc(wait/5, func() { leaves[0](); close(freed) })
	leave, err := k.take(ctx, 1, time.Second)
	if err != nil {
		t.Fatalf("key 1 once a place frees: %v", err)
	}
	leave()
	for _, leave := range leaves[1:] {
		leave()
	}
	<-freed
	k.mu.Lock()
	defer k.mu.Unlock()
	if n := len(k.keys); n != 0 {
		t.Errorf("%d keys left after every caller left, want 0", n)
	}
}
