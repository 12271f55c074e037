// Package checks holds the tests of the repository's non-Go files: the
// compose file, the Dockerfile, the Grafana dashboard's structure, the k6
// scripts and the CI workflow. It is a module of its own so that the app's
// go.mod carries only what the app needs; `make test` runs it too.
package checks
