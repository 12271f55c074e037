package app

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/config"
)

// TestRunConfigErrorStopsBeforeDatabase: run with a bad environment returns
// config.Load's error at once, before it dials the (unreachable) database
// or logs anything. internal/config tests each refusal itself.
func TestRunConfigErrorStopsBeforeDatabase(t *testing.T) {
	for _, bad := range []map[string]string{
		{"CACHE_MODE": "bogus"},
		{"REQUEST_TIMEOUT": "100ms", "DB_STATEMENT_TIMEOUT": "5s"},
		{"TRUSTED_PROXIES": "0.0.0.0/0"},
	} {
		env := map[string]string{"DATABASE_URL": "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=5"}
		for k, v := range bad {
			env[k] = v
		}
		_, want := config.Load(envOf(env))
		var out bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := run(ctx, envOf(env), &out)
		cancel()
		if err == nil || want == nil || err.Error() != want.Error() {
			t.Fatalf("run(%v): got error %v, want %v", bad, err, want)
		}
		if out.Len() != 0 {
			t.Errorf("run(%v) logged %q, want nothing (it must stop before starting anything)", bad, out.String())
		}
	}
}
