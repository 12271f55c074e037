package config

// Checks that .env.example lists exactly the variables config.go reads,
// each once with a comment, at its default. The names come from Load
// itself (a recording getenv), so the file cannot drift from it silently.
// The compose file and Dockerfile are checked in the checks module.

import (
	"bufio"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// configVariables returns every environment variable name Load reads.
func configVariables(t *testing.T) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	if _, err := Load(func(name string) string { seen[name] = true; return "" }); err != nil {
		t.Fatalf("Load with an empty environment (all defaults): %v", err)
	}
	if len(seen) == 0 {
		t.Fatal("Load read no environment variable")
	}
	return seen
}

// readEnvExample reads .env.example's NAME=value lines. The file keeps to
// plain unquoted values, which every env_file reader takes as written;
// quotes or an inline comment fail here (compose would strip them).
func readEnvExample(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile("../../.env.example")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		name, value, ok := strings.Cut(line, "=")
		if line == "" || strings.HasPrefix(line, "#") || !ok {
			continue
		}
		if strings.ContainsAny(value[:min(1, len(value))], `"'`) || strings.Contains(value, " #") {
			t.Errorf(".env.example: %s=%s: keep values unquoted and without inline comments", name, value)
		}
		env[name] = value
	}
	return env
}

func TestEnvExampleListsExactlyConfigVariables(t *testing.T) {
	known := configVariables(t)
	env := readEnvExample(t)
	for _, name := range slices.Sorted(maps.Keys(env)) {
		if !known[name] {
			t.Errorf(".env.example lists %s, which config.go does not read", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(known)) {
		if _, ok := env[name]; !ok {
			t.Errorf(".env.example does not list %s, which config.go reads", name)
		}
	}
}

var envLine = regexp.MustCompile(`^([A-Z][A-Z0-9_]*)=`)

func TestEnvExampleEachVariableCommentedOnce(t *testing.T) {
	f, err := os.Open("../../.env.example")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	count := map[string]int{}
	prev := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := envLine.FindStringSubmatch(line); m != nil {
			count[m[1]]++
			if !strings.HasPrefix(prev, "#") {
				t.Errorf(".env.example: %s is not preceded by a # comment line", m[1])
			}
		} else if line != "" && !strings.HasPrefix(line, "#") {
			t.Errorf(".env.example: line %q is neither NAME=value nor a comment", line)
		}
		prev = line
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(count)) {
		if count[name] > 1 {
			t.Errorf(".env.example lists %s %d times", name, count[name])
		}
	}
}

func TestEnvExampleValuesAreDefaults(t *testing.T) {
	env := readEnvExample(t)
	got, err := Load(envOf(env))
	if err != nil {
		t.Fatalf("Load with .env.example: %v", err)
	}
	want, err := Load(func(string) string { return "" })
	if err != nil {
		t.Fatalf("Load with defaults: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
		for i := range gv.NumField() {
			if !reflect.DeepEqual(gv.Field(i).Interface(), wv.Field(i).Interface()) {
				t.Errorf(".env.example gives %s = %v, config.go's default is %v",
					gv.Type().Field(i).Name, gv.Field(i).Interface(), wv.Field(i).Interface())
			}
		}
	}
}
