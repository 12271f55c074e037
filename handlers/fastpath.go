package handlers

// The fast path of a product read, kept apart so products.go reads like any
// gin handler. Each helper here replaces one plain line — c.Header per
// header, c.Data for the body, p.UpdatedAt.UTC().Format(http.TimeFormat),
// json.Marshal plus a hash for the body and its ETag — with one that
// allocates less on a read the L1 answers in a few hundred ns. They were
// measured, not guessed: docs/benchmarks.md "End to end: one hot key
// through the whole stack", and
//
//	go test -run '^$' -bench BenchmarkHotKey -benchmem ./internal/e2e
//
// A handler of your own needs none of them; copy get's shape, not these.

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/stampede-guard/api/repo"
)

// headers collects a product answer's headers and sets them at once, every
// value in one allocation. gin's c.Header (http.Header.Set) re-spells each
// key and allocates a one-value slice per header, and a product read sets
// up to seven on every answer.
//
// Keys must be in net/http's canonical spelling ("Etag", not "ETag"): they
// go into the map as given, as Header.Clone's do. TestProductHeaders checks
// the ones used here.
type headers struct {
	keys, vals [maxHeaders]string
	n          int
	more       []string // key, value, … past maxHeaders: set one by one
}

// maxHeaders is the most a product answer sets today: X-Cache,
// Cache-Status, Cache-Control, Etag, Last-Modified, Age, Content-Type.
const maxHeaders = 7

func (hs *headers) add(key, value string) {
	if hs.n == maxHeaders {
		hs.more = append(hs.more, key, value)
		return
	}
	hs.keys[hs.n], hs.vals[hs.n] = key, value
	hs.n++
}

// set writes the headers into the response, replacing earlier values (the
// no-store default).
func (hs *headers) set(c *gin.Context) {
	vals := make([]string, hs.n)
	copy(vals, hs.vals[:hs.n])
	h := c.Writer.Header()
	for i := range hs.n {
		h[hs.keys[i]] = vals[i : i+1 : i+1] // capped: an Add appends to a copy
	}
	for i := 0; i < len(hs.more); i += 2 {
		h[hs.more[i]] = []string{hs.more[i+1]}
	}
}

// answer sets the headers and answers with status and body (nil: none).
// Not c.Data: it also sets Content-Length, a ninth header, and a Go map
// holds eight before it grows into a table (twice: net/http clones the
// header map at WriteHeader). net/http writes Content-Length itself for a
// body written whole, as here.
func (hs *headers) answer(c *gin.Context, status int, body []byte) {
	hs.set(c)
	c.Status(status)
	if body != nil {
		_, _ = c.Writer.Write(body) // a client gone is not this answer's error
	}
}

// httpDates formats Last-Modified values and remembers the recent ones. A
// hot product is answered thousands of times a second with the same
// updated_at, and formatting it afresh each time was a sixtieth of the
// answer's CPU. http.TimeFormat has a resolution of one second, so a slot
// keyed by the Unix second holds exactly the string Format would write;
// slots are direct-mapped, so many products only cost a format each when
// two of them share a slot, as every read did before.
type httpDates struct {
	slots [256]atomic.Pointer[httpDate]
}

type httpDate struct {
	sec  int64
	text string
}

// lastModified is the Last-Modified of a product updated at t ("" for
// none): t.UTC().Format(http.TimeFormat).
func (d *httpDates) lastModified(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	sec := t.Unix()
	i := sec % int64(len(d.slots))
	if i < 0 { // before 1970
		i += int64(len(d.slots))
	}
	slot := &d.slots[i]
	if e := slot.Load(); e != nil && e.sec == sec {
		return e.text
	}
	text := t.UTC().Format(http.TimeFormat)
	slot.Store(&httpDate{sec: sec, text: text})
	return text
}

// productBodies remembers the encoded answer of recently read products, so
// a hot product is encoded (and its ETag hashed) once per version, not once
// per read. A slot holds one product, chosen by its id (direct-mapped, like
// httpDates), and answers only for a product equal in every field to the
// one it encoded: anything else is encoded afresh, so the body is always
// productJSON's.
type productBodies struct {
	slots [4096]atomic.Pointer[encodedProduct]
}

type encodedProduct struct {
	product repo.Product
	body    []byte // shared by every answer: never modified
	etag    string
}

// json is productJSON(p), from the memo when p was the last product
// encoded in its slot.
func (b *productBodies) json(p repo.Product) (body []byte, etag string) {
	i := p.ID % int64(len(b.slots))
	if i < 0 { // ids are positive, but the memo need not rely on it
		i += int64(len(b.slots))
	}
	slot := &b.slots[i]
	if e := slot.Load(); e != nil && e.product == p {
		return e.body, e.etag
	}
	body, etag = productJSON(p)
	slot.Store(&encodedProduct{product: p, body: body, etag: etag})
	return body, etag
}
