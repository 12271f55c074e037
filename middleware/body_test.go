package middleware_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/stampede-guard/api/middleware"
)

// TestReadBodyPacesFromTheFirstByte: the minimum rate is counted from the
// body's first byte, so a body that starts late but arrives whole (after
// "100 Continue" crossed a slow link, or in one late packet) is read, while
// a body that trickles is still cut off long before the read timeout, and
// one that never comes at that timeout.
func TestReadBodyPacesFromTheFirstByte(t *testing.T) {
	t.Parallel()
	const timeout, grace = 2 * time.Second, 500 * time.Millisecond
	gin.SetMode(gin.TestMode)
	r := gin.New()
	r.POST("/x", middleware.ReadBody(middleware.BodyConfig{MaxBytes: 1 << 20, Timeout: timeout, MinRate: 1024, Grace: grace}),
		func(c *gin.Context) { c.Status(http.StatusNoContent) })
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	body := `{"product_id":42,"quantity":1}`

	tests := []struct {
		name     string
		expect   bool                     // send "Expect: 100-continue" and wait for the 100
		send     func(net.Conn) error     // what follows the headers
		want     int                      // status
		in       func(time.Duration) bool // when the answer must come
		inReason string
	}{
		{"a body sent one slow round trip after 100 Continue", true, func(c net.Conn) error {
			time.Sleep(700 * time.Millisecond)
			_, err := c.Write([]byte(body))
			return err
		}, http.StatusNoContent, func(time.Duration) bool { return true }, ""},
		{"a small body in one packet, late", false, func(c net.Conn) error {
			time.Sleep(700 * time.Millisecond)
			_, err := c.Write([]byte(body))
			return err
		}, http.StatusNoContent, func(time.Duration) bool { return true }, ""},
		{"a body trickled a byte per 100 ms", false, func(c net.Conn) error {
			for i := range len(body) {
				if _, err := c.Write([]byte{body[i]}); err != nil {
					return nil // cut off, as it should be
				}
				time.Sleep(100 * time.Millisecond)
			}
			return nil
		}, http.StatusRequestTimeout, func(d time.Duration) bool { return d < timeout-grace }, "well before the read timeout"},
		{"a body that never comes", false, func(net.Conn) error { return nil },
			http.StatusRequestTimeout, func(d time.Duration) bool { return d >= timeout-100*time.Millisecond }, "at the read timeout, not before"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			head := fmt.Sprintf("POST /x HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", len(body))
			if tt.expect {
				head += "Expect: 100-continue\r\n"
			}
			start := time.Now()
			if _, err := conn.Write([]byte(head + "\r\n")); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(2 * timeout))
			br := bufio.NewReader(conn)
			if tt.expect {
				resp, err := http.ReadResponse(br, nil)
				if err != nil || resp.StatusCode != http.StatusContinue {
					t.Fatalf("want 100 Continue first: %v %v", resp, err)
				}
			}
			sent := make(chan error, 1)
			go func() { sent <- tt.send(conn) }()
			resp, err := http.ReadResponse(br, nil)
			took := time.Since(start)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want || !tt.in(took) {
				t.Errorf("got %d after %s, want %d %s", resp.StatusCode, took.Round(time.Millisecond), tt.want, tt.inReason)
			}
			_ = conn.Close()
			if err := <-sent; err != nil {
				t.Errorf("send: %v", err)
			}
		})
	}
}
