package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// maxAnswer caps how much of a body the client reads: the API's largest
// answer (a page of 100 products) is far below it.
const maxAnswer = 4 << 20

// attempt sends cl once, within timeout, and reads the whole answer so the
// connection goes back to the pool.
func (c *Client) attempt(ctx context.Context, cl call, timeout time.Duration) (*answer, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u := *c.base
	u.Path += cl.path
	u.RawQuery = cl.query.Encode()
	var body io.Reader = http.NoBody
	if cl.body != nil {
		body = bytes.NewReader(cl.body)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, u.String(), body)
	if err != nil {
		return nil, err
	}
	for k, vs := range cl.header {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", "application/json")
	if cl.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.apiKey != "" && cl.method != http.MethodGet && cl.method != http.MethodHead {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	return &answer{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// apiError builds the *APIError of an answer outside 2xx.
func (c *Client) apiError(cl call, ans *answer, attempts int) *APIError {
	e := &APIError{Method: cl.method, Path: cl.path, Status: ans.status, Header: ans.header, Attempts: attempts, body: ans.body}
	var body struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(ans.body, &body) == nil && body.Error != "" {
		e.Message = body.Error
	} else {
		e.Message = http.StatusText(ans.status)
	}
	if ra, ok := parseRetryAfter(ans.header.Get("Retry-After"), c.now()); ok {
		e.RetryAfter = ra
	}
	return e
}

// decode unmarshals a 2xx answer's JSON body into v.
func decode(cl call, ans *answer, v any) error {
	if err := json.Unmarshal(ans.body, v); err != nil {
		return fmt.Errorf("client: %s %s: decode %d answer: %w", cl.method, cl.path, ans.status, err)
	}
	return nil
}

// jsonBody marshals a request body; the types it gets cannot fail.
func jsonBody(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("client: marshal %T: %v", v, err))
	}
	return b
}
