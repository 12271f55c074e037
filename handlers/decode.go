package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
)

// maxBody caps request bodies; larger ones are refused with 413.
const maxBody = 1 << 20

// decodeJSON reads exactly one JSON object into dst, strictly: JSON content
// type, at most maxBody bytes, no unknown fields, no trailing data.
func decodeJSON(c *gin.Context, dst any) error {
	mt, _, err := mime.ParseMediaType(c.GetHeader("Content-Type"))
	if err != nil || mt != "application/json" {
		return &requestError{status: http.StatusUnsupportedMediaType, msg: "Content-Type must be application/json"}
	}
	dec := json.NewDecoder(http.MaxBytesReader(c.Writer, c.Request.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	// Decode stops after the first value; anything but the end of input
	// after it is a malformed request, not something to ignore.
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return jsonError(err)
		}
		return badRequest("request body must hold a single JSON object")
	}
	return nil
}

func jsonError(err error) error {
	var (
		syntax  *json.SyntaxError
		typ     *json.UnmarshalTypeError
		tooBig  *http.MaxBytesError
		invalid *json.InvalidUnmarshalError
	)
	switch {
	case errors.As(err, &tooBig):
		return &requestError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("request body exceeds %d bytes", maxBody)}
	case errors.Is(err, io.EOF):
		return badRequest("request body is empty")
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("request body is not valid JSON")
	case errors.As(err, &typ) && typ.Field == "":
		return badRequest("request body must be a JSON object")
	case errors.As(err, &typ):
		return badRequest(fmt.Sprintf("field %q must be a %s", typ.Field, typ.Type))
	case errors.As(err, &invalid):
		return err // a programming error: 500
	}
	// DisallowUnknownFields reports `json: unknown field "x"` with no type.
	return badRequest(err.Error())
}

// pathID parses the :id path parameter: a positive integer.
func pathID(c *gin.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, badRequest("id must be a positive integer")
	}
	return id, nil
}

// queryInt parses an optional integer query parameter within [lo, hi].
func queryInt(c *gin.Context, name string, def, lo, hi int64) (int64, error) {
	v, ok := c.GetQuery(name)
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, badRequest(fmt.Sprintf("%s must be an integer from %d to %d", name, lo, hi))
	}
	return n, nil
}
