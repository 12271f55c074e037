package checks

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestK6DurationReachesScriptsNotK6: `K6_DURATION=10s make k6` (the
// workflow's smoke run) must reach the scripts as -e DURATION and must not
// reach k6's own environment, where k6 reads K6_DURATION as its --duration
// and replaces every scenario with one VU looping `default`. A stand-in k6
// (a shell script writing down what it was given) runs against BASE_URL,
// so nothing is started or built.
func TestK6DurationReachesScriptsNotK6(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	fake := filepath.Join(dir, "k6")
	script := "#!/usr/bin/env bash\n" +
		"{ echo \"args: $*\"; echo \"K6_DURATION=${K6_DURATION-<unset>}\"; } >>" + record + "\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil { // #nosec G306 -- an executable stand-in
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join(repoRoot(t), "tools", "scripts", "k6.sh")) // #nosec G204 -- the repository's own script
	cmd.Env = append(os.Environ(), "K6="+fake, "K6_SCRIPTS=stampede", "K6_DURATION=7s", "BASE_URL=http://127.0.0.1:1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("k6.sh: %v\n%s", err, out)
	}
	got, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "-e DURATION=7s") {
		t.Errorf("the script did not get -e DURATION=7s:\n%s", got)
	}
	if !strings.Contains(string(got), "K6_DURATION=<unset>") {
		t.Errorf("k6 saw K6_DURATION in its environment (it would override every scenario):\n%s", got)
	}
}
