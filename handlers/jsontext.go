package handlers

import (
	"unicode/utf8"
)

// encoding/json never refuses broken text: invalid UTF-8 bytes and a lone
// UTF-16 surrogate escape ("\ud800" without its pair) both decode to
// U+FFFD. A name sent as "\ud800" would be stored as "\ufffd", a value the
// client never sent and may not notice; two readers of the same body (a
// proxy, a log, this service) would disagree on what it says. Such a body
// is refused with 400 before it is decoded.

// checkText refuses a body that is not valid UTF-8 or that holds a \u
// escape of a lone surrogate.
func checkText(body []byte) error {
	if !utf8.Valid(body) {
		return badRequest("request body must be valid UTF-8")
	}
	// A backslash appears only inside a JSON string (anywhere else the
	// decoder refuses the body), so no string tracking is needed.
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		r, ok := uEscape(body, i)
		switch {
		case !ok: // \n, \", \\ and the like: skip the escaped byte
			i++
		case r >= 0xD800 && r <= 0xDBFF: // a high surrogate needs its low half next
			if low, ok := uEscape(body, i+6); !ok || low < 0xDC00 || low > 0xDFFF {
				return badRequest(`request body holds a lone UTF-16 surrogate (\u` + string(body[i+2:i+6]) + `): send the character itself or a complete surrogate pair`)
			}
			i += 11
		case r >= 0xDC00 && r <= 0xDFFF:
			return badRequest(`request body holds a lone UTF-16 surrogate (\u` + string(body[i+2:i+6]) + `): send the character itself or a complete surrogate pair`)
		default:
			i += 5
		}
	}
	return nil
}

// uEscape reads a \uXXXX escape at body[i:], if there is one.
func uEscape(body []byte, i int) (rune, bool) {
	if i+6 > len(body) || body[i] != '\\' || body[i+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range body[i+2 : i+6] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
