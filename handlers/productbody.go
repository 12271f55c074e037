package handlers

// The body of a product write (POST, PUT): every field checked before the
// database sees it, and stock only adjusted by a PUT, never set, so an edit
// cannot undo the orders placed since its editor read the product.

import (
	"fmt"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
)

// productBody is the JSON of POST and PUT. Pointers tell a missing field
// from a zero one. POST sets the initial stock; PUT may only adjust it
// (stock_adjustment), so an edit can never undo orders placed since the
// editor read the product (see repo.ProductUpdate).
type productBody struct {
	Name            *string `json:"name"`
	PriceCents      *int64  `json:"price_cents"`
	Stock           *int32  `json:"stock"`
	StockAdjustment *int32  `json:"stock_adjustment"`
}

// Limits keep totals far from int64 overflow in the database.
const (
	maxPriceCents = 100_000_000_00 // 100 million in currency units
	maxNameLen    = 200
)

func (b productBody) validate() error {
	var missing []string
	if b.Name == nil {
		missing = append(missing, "name")
	}
	if b.PriceCents == nil {
		missing = append(missing, "price_cents")
	}
	switch {
	case len(missing) > 0:
		return badRequest("missing field(s): " + strings.Join(missing, ", "))
	case *b.Name == "" || len([]rune(*b.Name)) > maxNameLen:
		return badRequest(fmt.Sprintf("name must be 1 to %d characters", maxNameLen))
	case !utf8.ValidString(*b.Name) || strings.ContainsFunc(*b.Name, unicode.IsControl):
		return badRequest("name must be valid UTF-8 text without control characters")
	case !strings.ContainsFunc(*b.Name, visible):
		// Only spaces (U+3000 ideographic space, U+2028 line separator
		// too) and format characters (U+200B zero width space, U+202E
		// right-to-left override): a name no one can see or pick.
		return badRequest("name must have at least one visible character")
	case *b.PriceCents < 0 || *b.PriceCents > maxPriceCents:
		return badRequest(fmt.Sprintf("price_cents must be from 0 to %d", int64(maxPriceCents)))
	case b.Stock != nil && *b.Stock < 0:
		return badRequest("stock must not be negative")
	}
	return nil
}

// visible reports a character that shows on its own: a letter, number,
// punctuation or symbol, not a space, an invisible format character, a
// mark (it shows only on a character before it: U+034F, the variation
// selectors) or one of the letters and symbols drawn blank (the Hangul
// fillers, the blank braille pattern).
func visible(r rune) bool {
	switch r {
	case '\u115F', '\u1160', '\u3164', '\uFFA0', '\u2800':
		return false
	}
	return unicode.IsGraphic(r) && !unicode.IsSpace(r) && !unicode.IsMark(r)
}

// readProductBody decodes and validates the body of POST and PUT.
func readProductBody(c *gin.Context) (productBody, error) {
	var b productBody
	if err := decodeJSON(c, &b); err != nil {
		return b, err
	}
	switch {
	case c.Request.Method == http.MethodPut && b.Stock != nil:
		return b, badRequest("PUT cannot set stock: that would undo orders placed since you read the product; " +
			`send "stock_adjustment" (e.g. 10 or -3) instead`)
	case c.Request.Method == http.MethodPost && b.StockAdjustment != nil:
		return b, badRequest(`a new product has "stock", not "stock_adjustment"`)
	}
	return b, b.validate()
}
