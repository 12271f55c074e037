package checks

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeGo stands in for `go run <tool>@<version>` in scripts/security.sh:
// gosec and govulncheck answer as FAKE_GOSEC and FAKE_VULN say, instantly
// and offline; gosec's arguments go to the file FAKE_GOSEC_ARGS names.
// `go list` is the real one (REAL_GO).
const fakeGo = `#!/bin/sh
[ "$1" = list ] && exec "$REAL_GO" "$@" # the packages to scan: the real answer
case "$2" in
*gosec*)
	[ -n "$FAKE_GOSEC_ARGS" ] && { shift 2; printf '%s\n' "$@" >"$FAKE_GOSEC_ARGS"; }
	[ "$FAKE_GOSEC" = finding ] && { echo "[cache/warm.go:40] - G404 (CWE-338): Use of weak random number generator"; exit 1; }
	exit 0 ;;
*govulncheck*)
	case "$FAKE_VULN" in
	offline) echo 'go: downloading golang.org/x/vuln v1.9.0' >&2
		echo 'govulncheck: fetching vulnerabilities: Get "https://vuln.go.dev/index/modules.json.gz": dial tcp: lookup vuln.go.dev: no such host' >&2
		exit 1 ;;
	found) echo 'Vulnerability #1: GO-2099-0001'; exit 3 ;;
	*) echo 'No vulnerabilities found.'; exit 0 ;;
	esac ;;
esac
exit 2
`

// TestSecurityScript: `make security` fails on a gosec finding and on a
// known vulnerability, passes when both are clean, and when the
// vulnerability database cannot be reached says so in exactly one line and
// passes. The annotations and the baseline are the repository's own.
func TestSecurityScript(t *testing.T) {
	goBin := filepath.Join(t.TempDir(), "go")
	if err := os.WriteFile(goBin, []byte(fakeGo), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, gosec, vuln string
		wantOK            bool
		wantLine          string // a line of the output that must appear
	}{
		{"all clean", "", "clean", true, "No vulnerabilities found."},
		{"database unreachable", "", "offline", true, "govulncheck: SKIPPED, the vulnerability database https://vuln.go.dev could not be reached"},
		{"known vulnerability", "", "found", false, "Vulnerability #1: GO-2099-0001"},
		{"gosec finding", "finding", "clean", false, "gosec: findings above"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("bash", filepath.Join(repoRoot(t), "tools", "scripts", "security.sh"))
			cmd.Env = append(os.Environ(), "GO="+goBin, "REAL_GO="+realGo(t), "FAKE_GOSEC="+tc.gosec, "FAKE_VULN="+tc.vuln)
			out, err := cmd.CombinedOutput()
			if (err == nil) != tc.wantOK {
				t.Fatalf("exit error %v, want success %t; output:\n%s", err, tc.wantOK, out)
			}
			if !strings.Contains(string(out), tc.wantLine) {
				t.Errorf("output lacks %q:\n%s", tc.wantLine, out)
			}
			if tc.vuln == "offline" {
				var vulnLines []string
				for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
					if strings.Contains(l, "vuln.go.dev") && !strings.HasPrefix(l, "govulncheck (") {
						vulnLines = append(vulnLines, l)
					}
				}
				if len(vulnLines) != 1 {
					t.Errorf("want one line about the unreachable database, got %d:\n%s", len(vulnLines), out)
				}
			}
		})
	}
}
