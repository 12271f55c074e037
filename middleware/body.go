package middleware

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/gin-gonic/gin"
)

// BodyConfig bounds how a request body may arrive.
type BodyConfig struct {
	// MaxBytes is the largest body; a Content-Length over it is refused
	// with 413 before anything is read (so no 100 Continue is sent).
	MaxBytes int64
	// Timeout bounds the whole body read.
	Timeout time.Duration
	// MinRate, in bytes per second, is how fast a body must keep arriving
	// once its first byte came, after Grace; a client that trickles is cut
	// off with 408. 0 disables.
	MinRate int64
	Grace   time.Duration
}

// ReadBody reads the whole request body into memory, bounded in size, time
// and rate, before the rest of the chain runs. Placed before the shedder
// and the concurrency limit, it means a slow client holds a goroutine and a
// socket while it trickles — never a concurrency slot or a pool connection,
// which are what every other client needs (slowloris on the body).
func ReadBody(cfg BodyConfig) gin.HandlerFunc {
	return func(c *gin.Context) {
		r := c.Request
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			c.Next()
			return
		}
		if r.ContentLength > cfg.MaxBytes {
			Refuse(c, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", cfg.MaxBytes), 0)
			return
		}
		body, err := readPaced(c, cfg)
		var big *http.MaxBytesError
		switch {
		case errors.As(err, &big):
			Refuse(c, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", cfg.MaxBytes), 0)
			return
		case isTimeout(err):
			c.Header("Connection", "close")
			Refuse(c, http.StatusRequestTimeout, "the request body arrived too slowly", 0)
			return
		case err != nil:
			// The client went away or sent a broken encoding; the error
			// names sockets, so it is not echoed.
			c.Header("Connection", "close")
			Refuse(c, http.StatusBadRequest, "request body could not be read", 0)
			return
		}
		r.Body = readBody{bytes.NewReader(body)}
		c.Next()
	}
}

// readBody is a body ReadBody has read into memory: what the handlers read,
// and how Refuse knows the client's bytes are all in.
type readBody struct{ *bytes.Reader }

func (readBody) Close() error { return nil }

// readPaced reads the body with a read deadline that moves with the bytes
// received: first + Grace + received/MinRate, never past start + Timeout.
// The pace is counted from the body's first byte, not from the headers:
// until it comes only Timeout bounds the wait. A client that sends
// "Expect: 100-continue" can send nothing before the server's "100
// Continue" (written at the first read) has crossed the link, and a small
// body sent in one packet half a second after its headers is not a
// trickle; counted from the headers, both were cut off with 408 on a link
// with a round trip of 500 ms, every time they were retried.
// Where the connection cannot take deadlines (tests with a recorder) it
// reads without them.
func readPaced(c *gin.Context, cfg BodyConfig) ([]byte, error) {
	rc := http.NewResponseController(c.Writer)
	hardStop := time.Now().Add(cfg.Timeout)
	src := http.MaxBytesReader(c.Writer, c.Request.Body, cfg.MaxBytes)
	var buf bytes.Buffer
	var first time.Time // when the first bytes came
	chunk := make([]byte, 4096)
	deadlines := true
	for {
		if deadlines {
			d := hardStop
			if cfg.MinRate > 0 && buf.Len() > 0 {
				paced := first.Add(cfg.Grace + time.Duration(float64(buf.Len())/float64(cfg.MinRate)*float64(time.Second)))
				if paced.Before(d) {
					d = paced
				}
			}
			if err := rc.SetReadDeadline(d); err != nil {
				deadlines = false
			}
		}
		n, err := src.Read(chunk)
		if n > 0 && buf.Len() == 0 {
			first = time.Now()
		}
		buf.Write(chunk[:n])
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if deadlines {
		// The server sets its own deadlines for the next request.
		_ = rc.SetReadDeadline(time.Time{})
	}
	return buf.Bytes(), nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
