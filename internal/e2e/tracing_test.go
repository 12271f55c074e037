package e2e

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP trace endpoint that keeps what it receives:
// the app under test exports to it exactly as it would to Jaeger.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		var msg coltrace.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(b, &msg)
		}
		if req.URL.Path != "/v1/traces" || err != nil {
			t.Errorf("OTLP receiver: %s %s: %v", req.Method, req.URL.Path, err)
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range msg.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ = proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		_, _ = w.Write(b)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *otlpReceiver) all() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...)
}

func spansNamed(spans []*tracepb.Span, name string) []*tracepb.Span {
	var out []*tracepb.Span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func spanAttr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			switch v := kv.Value.Value.(type) {
			case *commonpb.AnyValue_StringValue:
				return v.StringValue
			case *commonpb.AnyValue_BoolValue:
				return fmt.Sprint(v.BoolValue)
			case *commonpb.AnyValue_IntValue:
				return fmt.Sprint(v.IntValue)
			}
		}
	}
	return ""
}

func isChild(s, parent *tracepb.Span) bool {
	return hex.EncodeToString(s.ParentSpanId) == hex.EncodeToString(parent.SpanId) &&
		hex.EncodeToString(s.TraceId) == hex.EncodeToString(parent.TraceId)
}

func children(spans []*tracepb.Span, parent *tracepb.Span) []*tracepb.Span {
	var out []*tracepb.Span
	for _, s := range spans {
		if isChild(s, parent) {
			out = append(out, s)
		}
	}
	return out
}

// A cold read, as exported over OTLP by the running app (nothing but the
// standard endpoint variable set): the request's server span encloses
// cache.Fetch (miss), whose children are the lock wait, the load (with the
// PostgreSQL query under it) and the fenced write; Redis commands have
// spans of their own. Stopping the app flushes every span.
func TestTracingColdReadSpanTree(t *testing.T) {
	recv := newOTLPReceiver(t)
	env := testEnv(t)
	env["OTEL_EXPORTER_OTLP_ENDPOINT"] = recv.URL
	env["CACHE_MODE"] = "lock"
	a := launchApp(t, env)
	base, stop := a.waitListening(), a.stop
	// The start says where spans go.
	if recs := a.logs.records("tracing on: spans exported over OTLP/HTTP"); len(recs) != 1 || recs[0]["endpoint"] != recv.URL+"/v1/traces" {
		t.Errorf("tracing start lines: %v, want one naming %s/v1/traces", recs, recv.URL)
	}
	if resp, body := call(t, http.MethodGet, base+"/products/7", nil, ""); resp.StatusCode != http.StatusOK || resp.Header.Get("X-Cache") != "MISS" {
		t.Fatalf("GET /products/7: %d %s %s, want a 200 MISS", resp.StatusCode, resp.Header.Get("X-Cache"), body)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	spans := recv.all()
	var server *tracepb.Span
	for _, s := range spans {
		if s.Kind == tracepb.Span_SPAN_KIND_SERVER && spanAttr(s, "http.route") == "/products/:id" {
			server = s
		}
	}
	if server == nil {
		t.Fatalf("no server span with http.route /products/:id among %d spans", len(spans))
	}
	var fetch *tracepb.Span
	for _, s := range spansNamed(spans, "cache.Fetch") {
		if isChild(s, server) {
			fetch = s
		}
	}
	if fetch == nil {
		t.Fatal("no cache.Fetch span under the request's server span")
	}
	if got := spanAttr(fetch, "cache.status"); got != "miss" {
		t.Errorf("cache.Fetch cache.status = %q, want miss", got)
	}
	kids := map[string]*tracepb.Span{}
	for _, s := range children(spans, fetch) {
		kids[s.Name] = s
	}
	for _, name := range []string{"cache.lock", "cache.load", "cache.write"} {
		if kids[name] == nil {
			t.Errorf("cache.Fetch has no %s child (children: %v)", name, slices.Sorted(maps.Keys(kids)))
		}
	}
	if load := kids["cache.load"]; load != nil {
		pg := false
		for _, s := range children(spans, load) {
			pg = pg || spanAttr(s, "db.system") == "postgresql" || spanAttr(s, "db.system.name") == "postgresql"
		}
		if !pg {
			t.Error("cache.load has no PostgreSQL query span under it")
		}
	}
	if lock := kids["cache.lock"]; lock != nil {
		redisUnder := false
		for _, s := range children(spans, lock) {
			redisUnder = redisUnder || spanAttr(s, "db.system") == "redis" || spanAttr(s, "db.system.name") == "redis"
		}
		if !redisUnder {
			t.Error("cache.lock has no Redis command span under it (SET NX)")
		}
	}
}

// A stampede on one cold key across two instances exporting to one
// collector: one Fetch span per request, exactly one load span in all of
// them, and every other Fetch shared (or a hit after the fill).
func TestTracingStampedeSpans(t *testing.T) {
	const n = 30
	recv := newOTLPReceiver(t)
	env := testEnv(t)
	env["OTEL_EXPORTER_OTLP_ENDPOINT"] = recv.URL
	env["CACHE_MODE"] = "lock"
	gate := make(chan struct{})
	apps := []*instance{launchApp(t, env, afterGate(gate)), launchApp(t, env, afterGate(gate))}
	close(gate)
	bases := []string{apps[0].waitListening(), apps[1].waitListening()}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			resp, body, err := send(http.MethodGet, bases[i%2]+"/products/11", nil, "")
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("GET /products/11: %v %v %s", err, resp, body)
			}
		})
	}
	close(start)
	wg.Wait()
	for _, a := range apps {
		if err := a.stop(); err != nil {
			t.Fatal(err)
		}
	}
	spans := recv.all()
	fetches := spansNamed(spans, "cache.Fetch")
	loads := spansNamed(spans, "cache.load")
	if len(fetches) != n || len(loads) != 1 {
		t.Fatalf("%d cache.Fetch and %d cache.load spans, want %d and 1", len(fetches), len(loads), n)
	}
	owner, others := 0, 0
	for _, f := range fetches {
		switch {
		case isChild(loads[0], f):
			owner++
		case spanAttr(f, "cache.shared") == "true" || spanAttr(f, "cache.status") == "hit":
			others++
		default:
			t.Errorf("a Fetch neither loaded, nor shared a load, nor hit: %v", f.Attributes)
		}
	}
	if owner != 1 || others != n-1 {
		t.Errorf("%d Fetch spans own the load, %d shared or hit; want 1 and %d", owner, others, n-1)
	}
}
