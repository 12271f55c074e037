package checks

import (
	"path/filepath"
	"testing"

	"github.com/compose-spec/compose-go/v2/dotenv"
)

// repoRoot is the repository root: the parent of this module's folder.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// readEnvExample parses .env.example as compose reads an env_file.
func readEnvExample(t *testing.T) map[string]string {
	t.Helper()
	env, err := dotenv.Read(filepath.Join(repoRoot(t), ".env.example"))
	if err != nil {
		t.Fatalf("parse .env.example: %v", err)
	}
	return env
}
