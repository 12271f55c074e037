package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
)

// MaxBody caps request bodies; larger ones are refused with 413.
const MaxBody = 1 << 20

// decodeJSON reads exactly one JSON object into dst, strictly: JSON content
// type, at most MaxBody bytes, valid UTF-8 without lone surrogates, no
// unknown, duplicate or case-mismatched keys, no trailing data. A Content-Length over the limit is refused before
// anything is read, so a client that sent Expect: 100-continue never gets
// its 100 Continue.
func decodeJSON(c *gin.Context, dst any) error {
	ct, _, err := headerOnce(c, "Content-Type")
	if err != nil {
		return err // which of two types the body is in cannot be told
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return &requestError{status: http.StatusUnsupportedMediaType, msg: "Content-Type must be application/json"}
	}
	// JSON is UTF-8 (RFC 8259 §8.1): a body declared in another charset
	// was read as UTF-8 anyway, and a compressed one as if it were not.
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return &requestError{status: http.StatusUnsupportedMediaType, msg: "JSON bodies are UTF-8: send charset=utf-8 or no charset"}
	}
	for _, ce := range c.Request.Header.Values("Content-Encoding") {
		if !strings.EqualFold(strings.TrimSpace(ce), "identity") {
			c.Header("Accept-Encoding", "identity") // RFC 9110 §12.5.3
			return &requestError{status: http.StatusUnsupportedMediaType, msg: "Content-Encoding is not supported: send the body uncompressed"}
		}
	}
	if c.Request.ContentLength > MaxBody {
		return tooLarge()
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, MaxBody))
	if err != nil {
		var big *http.MaxBytesError
		if errors.As(err, &big) {
			return tooLarge()
		}
		// A read error names sockets (ours and the client's): never echo it.
		return &requestError{status: http.StatusBadRequest, msg: "request body could not be read", cause: err}
	}
	if err := checkText(body); err != nil { // jsontext.go
		return err
	}
	if err := checkKeys(body, dst); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	// Decode stops after the first value; anything but the end of input
	// after it is a malformed request, not something to ignore.
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return badRequest("request body must hold a single JSON object")
	}
	return nil
}

func tooLarge() error {
	return &requestError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("request body exceeds %d bytes", MaxBody)}
}

// checkKeys refuses what encoding/json would quietly accept in a top-level
// object: a key given twice (the last one would win: two readers of the
// body could disagree), a key that matches a field only when case is
// ignored ("Price_Cents"), and null for a field (the decoder leaves the
// field as if absent: `"stock": null` passed where `"stock": 0` is
// refused, and no field of these bodies means anything by null). Anything
// not an object is left to the decoder.
func checkKeys(body []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err == nil && tok == nil {
		// null decodes into a struct as nothing at all, and would be
		// answered "missing fields" rather than what it is.
		return badRequest("request body must be a JSON object, not null")
	}
	if err != nil || tok != json.Delim('{') {
		return nil
	}
	names := jsonNames(dst)
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil // malformed: the decoder says so
		}
		key, _ := tok.(string)
		if seen[key] {
			return badRequest(fmt.Sprintf("field %s appears more than once", quoteName(key)))
		}
		seen[key] = true
		typ, known := names[key]
		if !known {
			for n := range names {
				if strings.EqualFold(n, key) {
					return badRequest(fmt.Sprintf("unknown field %s (field names are case-sensitive: %q)", quoteName(key), n))
				}
			}
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil
		}
		if known && string(value) == "null" {
			return badRequest(fmt.Sprintf("field %s must be %s, not null", quoteName(key), jsonKind(typ)))
		}
	}
	return nil
}

// jsonNames maps the JSON keys of the struct dst points to to their
// fields' types.
func jsonNames(dst any) map[string]reflect.Type {
	names := map[string]reflect.Type{}
	t := reflect.TypeOf(dst)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return names
	}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		names[name] = f.Type
	}
	return names
}

func jsonError(err error) error {
	var (
		syntax  *json.SyntaxError
		typ     *json.UnmarshalTypeError
		invalid *json.InvalidUnmarshalError
	)
	switch {
	case errors.Is(err, io.EOF):
		return badRequest("request body is empty")
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("request body is not valid JSON")
	case errors.As(err, &typ) && typ.Field == "":
		return badRequest("request body must be a JSON object")
	case errors.As(err, &typ) && outOfRange(typ):
		return badRequest(fmt.Sprintf("field %q is out of range: %s", typ.Field, intBound(typ)))
	case errors.As(err, &typ):
		return badRequest(fmt.Sprintf("field %q must be %s", typ.Field, jsonKind(typ.Type)))
	case errors.As(err, &invalid):
		return err // a programming error: 500
	}
	// DisallowUnknownFields reports `json: unknown field "x"`; pass that
	// on, and nothing else the decoder may say.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if unquoted, err := strconv.Unquote(name); err == nil {
			name = unquoted
		}
		return badRequest("unknown field " + quoteName(name))
	}
	return &requestError{status: http.StatusBadRequest, msg: "request body is not valid JSON", cause: err}
}

// maxNameEcho bounds how much of a field name an error repeats: a body
// of one 500 KB key was answered with a 500 KB error.
const maxNameEcho = 64

// quoteName is a field name as an error quotes it, cut to maxNameEcho
// bytes (on a rune boundary) with "…" after the quote when cut.
func quoteName(name string) string {
	if len(name) <= maxNameEcho {
		return strconv.Quote(name)
	}
	cut := maxNameEcho
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return strconv.Quote(name[:cut]) + "…"
}

// outOfRange tells an integer too large for its field (`"quantity":
// 100000000000` into an int32) from a value of the wrong kind (`1.5`,
// `"1"`): the decoder reports both alike, and "must be an integer" would
// be false for the first.
func outOfRange(typ *json.UnmarshalTypeError) bool {
	lit, ok := strings.CutPrefix(typ.Value, "number ")
	if !ok || jsonKind(typ.Type) != "an integer" {
		return false
	}
	lit = strings.TrimPrefix(lit, "-")
	return lit != "" && strings.Trim(lit, "0123456789") == ""
}

// intBound says which end of its integer field's range a value outOfRange
// passed: "at most 2147483647", "at least -2147483648".
func intBound(typ *json.UnmarshalTypeError) string {
	t := typ.Type
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	bits := t.Bits()
	switch {
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64:
		if strings.HasPrefix(typ.Value, "number -") {
			return "at least 0"
		}
		return fmt.Sprintf("at most %d", uint64(1)<<bits-1)
	case strings.HasPrefix(typ.Value, "number -"):
		return fmt.Sprintf("at least %d", -int64(1)<<(bits-1))
	}
	return fmt.Sprintf("at most %d", int64(1)<<(bits-1)-1)
}

// jsonKind names what a Go field accepts in JSON words, for a client who
// never saw the Go type ("an integer", not "int64").
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}
