package handlers

import (
	"math"
	"testing"
)

// TestOrderMaxQuantityBounds: ORDER_MAX_QUANTITY reaches the handler as
// an int; below 1 it is the default, and it never wraps when narrowed to
// the int32 of the orders' quantity column.
func TestOrderMaxQuantityBounds(t *testing.T) {
	cases := []struct {
		name string
		in   int
		want int32
	}{
		{"unset", 0, DefaultMaxQuantity},
		{"negative", -3, DefaultMaxQuantity},
		{"set", 7, 7},
		{"an int32's most", math.MaxInt32, math.MaxInt32},
		{"past an int32", math.MaxInt32 + 1, math.MaxInt32},
		{"far past", 1 << 40, math.MaxInt32},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := NewOrders(nil, tc.in, nil).maxQuantity; got != tc.want {
				t.Fatalf("NewOrders(_, %d) holds %d items at most, want %d", tc.in, got, tc.want)
			}
		})
	}
}
