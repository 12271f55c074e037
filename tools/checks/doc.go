// Package checks holds the tests of the repository's non-Go files: the
// compose file, the Dockerfile, the Grafana dashboard's structure, the k6
// scripts and the CI workflow, and of the repository's shape: the layering
// of its packages and the design card's stack (stack_test.go). It is a
// module of its own so that the app's go.mod carries only what the app
// needs; `make test` runs it too.
package checks

// Versions: compose-go stays at v2.10.1 because it and actionlint v1.7.12
// must agree on go.yaml.in/yaml/v4 v4.0.0-rc.3 (later compose-go releases
// need rc.4, which actionlint does not compile against).
//
// k8s.io/api and k8s.io/apimachinery v0.37.2 with sigs.k8s.io/yaml v1.6.0
// decode deploy/k8s strictly (k8s_test.go); they leave the yaml/v4 pin alone.
