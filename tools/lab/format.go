package main

import (
	"fmt"
	"strings"
)

// Table cells: the figures as the printed tables show them.

func itoa[T int | int64](v T) string { return fmt.Sprint(v) }

func fnum(v float64) string { return format(v) }

func fmtMs(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.2fs", v/1000)
	}
	return fmt.Sprintf("%.0fms", v)
}

// failedCell is the failure count with its statuses: "0" or "12 (503×12)".
func failedCell(b *LoadStats) string {
	if b.Failed == 0 {
		return "0"
	}
	m := map[string]int{}
	for k, v := range b.ByStatus {
		if !strings.HasPrefix(k, "2") {
			m[k] = v
		}
	}
	return fmt.Sprintf("%d (%s)", b.Failed, statusSummary(m))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func plural(n int64, format string) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(format, n)
}

// slug turns a row label into a file-name part.
func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}
