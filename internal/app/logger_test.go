package app

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

func TestLoggerWritesDurationsAsText(t *testing.T) {
	cases := []struct {
		name string
		args []any
		key  string
		want any
	}{
		{"duration", []any{"took", 21 * time.Millisecond}, "took", "21ms"},
		{"zero duration", []any{"drain_delay", time.Duration(0)}, "drain_delay", "0s"},
		{"number untouched", []any{"ids", 1000}, "ids", float64(1000)},
		{"text untouched", []any{"addr", ":8080"}, "addr", ":8080"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			newLogger(&buf, "info").Info("m", tc.args...)
			var line map[string]any
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
				t.Fatalf("not one JSON line: %q: %v", buf.String(), err)
			}
			if got := line[tc.key]; got != tc.want {
				t.Fatalf("%s = %#v, want %#v (line %s)", tc.key, got, tc.want, buf.String())
			}
		})
	}
}
