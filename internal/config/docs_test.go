package config

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/configuration.md from .env.example")

const configDoc = "../../docs/configuration.md"

// envEntry is one variable of .env.example: its comment and default.
type envEntry struct{ name, def, doc string }

// envEntries reads .env.example in order: each NAME=value with the comment
// lines just above it.
func envEntries(t *testing.T) []envEntry {
	t.Helper()
	f, err := os.Open("../../.env.example")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	assign := regexp.MustCompile(`^([A-Z][A-Z0-9_]*)=(.*)$`)
	var out []envEntry
	var comment []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch m := assign.FindStringSubmatch(line); {
		case strings.HasPrefix(line, "#"):
			comment = append(comment, strings.TrimSpace(strings.TrimPrefix(line, "#")))
		case m != nil:
			out = append(out, envEntry{m[1], m[2], strings.Join(comment, " ")})
			comment = nil
		default:
			comment = nil
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// renderConfigDoc is docs/configuration.md: the first-week settings, then
// every other one, each with its default and .env.example's words.
func renderConfigDoc(entries []envEntry) string {
	var b strings.Builder
	b.WriteString("# Configuration\n\n")
	b.WriteString("<!-- Generated from .env.example by internal/config/docs_test.go: edit .env.example, then run\n")
	b.WriteString("     go test ./internal/config -run TestConfigurationDoc -update-docs -->\n\n")
	b.WriteString("Every variable is optional; an unset or empty one takes the default below. ")
	b.WriteString("Durations are Go durations (`300ms`, `5s`). The app checks the whole set at start and ")
	b.WriteString("refuses, with one line naming the variable, a value that would break a protection ")
	b.WriteString("(internal/config).\n\n")
	table := func(title, intro string, keep func(envEntry) bool) {
		fmt.Fprintf(&b, "## %s\n\n%s\n\n| variable | default | meaning |\n|---|---|---|\n", title, intro)
		for _, e := range entries {
			if keep(e) {
				def := "`" + e.def + "`"
				if e.def == "" {
					def = "(empty)"
				}
				fmt.Fprintf(&b, "| `%s` | %s | %s |\n", e.name, def, strings.ReplaceAll(e.doc, "|", `\|`))
			}
		}
		b.WriteString("\n")
	}
	first := func(e envEntry) bool { return slices.Contains(FirstWeek, e.name) }
	table("First-week settings", fmt.Sprintf("The %d settings a new deployment changes. The time budget is the model: "+
		"set `REQUEST_TIMEOUT` and the acquire, statement, lock and write timeouts follow it.", len(FirstWeek)), first)
	table("Advanced settings", "Derived from the ones above unless set; change one at a time, with the lab "+
		"(`make lab`) or a load test to see its effect.", func(e envEntry) bool { return !first(e) })
	return b.String()
}

// TestConfigurationDoc: docs/configuration.md is what .env.example says,
// and every first-week setting is a variable the app reads.
func TestConfigurationDoc(t *testing.T) {
	entries := envEntries(t)
	vars := configVariables(t)
	for _, name := range FirstWeek {
		if !vars[name] {
			t.Errorf("FirstWeek lists %s, which Load does not read", name)
		}
	}
	if len(FirstWeek) > 20 {
		t.Errorf("FirstWeek has %d settings; a newcomer holds at most 20", len(FirstWeek))
	}
	want := renderConfigDoc(entries)
	if *updateDocs {
		if err := os.WriteFile(configDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s is not what .env.example says; run: go test ./internal/config -run TestConfigurationDoc -update-docs", configDoc)
	}
}
