package checks

// Checks of docker-compose.yml and the Dockerfile that run without Docker,
// PostgreSQL or Redis. The variable names come from .env.example, which the
// root package's tests hold equal to what config.go reads, so these files
// cannot drift from it silently.

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

func sortedNames[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// loadCompose loads docker-compose.yml the way `docker compose` would, with
// the given profiles active, an empty host environment (so the result does not
// depend on the machine) and env_file entries merged into each service's
// environment.
func loadCompose(t *testing.T, profiles ...string) *types.Project {
	t.Helper()
	wd := repoRoot(t)
	details := types.ConfigDetails{
		WorkingDir:  wd,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(wd, "docker-compose.yml")}},
		Environment: types.Mapping{},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	project, err := loader.LoadWithContext(ctx, details, func(o *loader.Options) {
		o.Profiles = profiles
	})
	if err != nil {
		t.Fatalf("load docker-compose.yml: %v", err)
	}
	return project
}

func composeService(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, err := p.GetService(name)
	if err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return s
}

// envMap turns a resolved compose environment into plain strings.
func composeEnvMap(env types.MappingWithEquals) map[string]string {
	out := map[string]string{}
	for k, v := range env {
		if v != nil {
			out[k] = *v
		} else {
			out[k] = ""
		}
	}
	return out
}

func TestComposeServices(t *testing.T) {
	p := loadCompose(t)
	for _, name := range []string{"postgres", "redis", "app"} {
		s := composeService(t, p, name)
		hc := s.HealthCheck
		if hc == nil || hc.Disable || len(hc.Test) < 2 || hc.Test[0] == "NONE" {
			t.Errorf("service %s: no health check (depends_on service_healthy needs one)", name)
		}
	}
	if test := strings.Join(composeService(t, p, "postgres").HealthCheck.Test, " "); !strings.Contains(test, "pg_isready") {
		t.Errorf("postgres health check %q does not use pg_isready", test)
	}
	if test := strings.Join(composeService(t, p, "redis").HealthCheck.Test, " "); !strings.Contains(test, "redis-cli") || !strings.Contains(test, "ping") {
		t.Errorf("redis health check %q does not use redis-cli ping", test)
	}
}

// TestComposeSeedsOnce: a one-shot service runs `api seed` (from the app's
// image) once PostgreSQL is healthy, and the app starts after it succeeded.
func TestComposeSeedsOnce(t *testing.T) {
	p := loadCompose(t)
	seed := composeService(t, p, "seed")
	if got := strings.Join(seed.Command, " "); got != "seed" {
		t.Errorf("seed service command %q, want seed", got)
	}
	if seed.Build == nil || filepath.Clean(seed.Build.Context) != repoRoot(t) {
		t.Errorf("seed service does not build the app's image (build %+v)", seed.Build)
	}
	if d, ok := seed.DependsOn["postgres"]; !ok || d.Condition != types.ServiceConditionHealthy {
		t.Errorf("seed service does not wait for a healthy postgres: %+v", seed.DependsOn)
	}
	if seed.Restart != "" && seed.Restart != "no" {
		t.Errorf("seed service restart %q: a one-shot job must not restart", seed.Restart)
	}
	dbURL := composeEnvMap(seed.Environment)["DATABASE_URL"]
	if u, err := url.Parse(dbURL); err != nil || u.Hostname() != "postgres" {
		t.Errorf("seed DATABASE_URL %q: want the postgres service", dbURL)
	}
	app := composeService(t, p, "app")
	if d, ok := app.DependsOn["seed"]; !ok || d.Condition != types.ServiceConditionCompletedSuccessfully {
		t.Errorf("app does not wait for seed to complete successfully: %+v", app.DependsOn["seed"])
	}
}

// TestComposeAdminHasToken: the app refuses to start with a non-loopback
// ADMIN_ADDR and no ADMIN_TOKEN of at least 16 characters
// (internal/config/guards.go), so compose, which listens on every
// interface inside the container, must give it one — and let .env
// replace it.
func TestComposeAdminHasToken(t *testing.T) {
	env := composeEnvMap(composeService(t, loadCompose(t), "app").Environment)
	host, _, err := net.SplitHostPort(env["ADMIN_ADDR"])
	loopback := err == nil && (host == "localhost" || net.ParseIP(host) != nil && net.ParseIP(host).IsLoopback())
	if env["ADMIN_ADDR"] != "off" && !loopback && len(env["ADMIN_TOKEN"]) < 16 {
		t.Errorf("app ADMIN_ADDR=%q is not loopback and ADMIN_TOKEN has %d characters: the app would refuse to start (want at least 16)",
			env["ADMIN_ADDR"], len(env["ADMIN_TOKEN"]))
	}
	own := composeEnvMap(composeService(t, loadComposeWith(t, map[string]string{"ADMIN_TOKEN": "my-own-admin-token-0123"}), "app").Environment)
	if own["ADMIN_TOKEN"] != "my-own-admin-token-0123" {
		t.Errorf("ADMIN_TOKEN set in .env or the shell: the app gets %q, want the user's token", own["ADMIN_TOKEN"])
	}
}

// TestComposeDataServicesOnLoopback: PostgreSQL (password "postgres") and
// Redis (no password) are published on the host's loopback only, never on
// every interface.
func TestComposeDataServicesOnLoopback(t *testing.T) {
	p := loadCompose(t)
	for _, name := range []string{"postgres", "redis"} {
		s := composeService(t, p, name)
		for _, port := range s.Ports {
			if port.Published != "" && port.HostIP != "127.0.0.1" && port.HostIP != "::1" {
				t.Errorf("service %s publishes %s:%d on %q, want 127.0.0.1", name, port.Published, port.Target, port.HostIP)
			}
		}
	}
}

func TestComposeAppDependsOnHealthyServices(t *testing.T) {
	app := composeService(t, loadCompose(t), "app")
	for _, dep := range []string{"postgres", "redis"} {
		d, ok := app.DependsOn[dep]
		if !ok {
			t.Errorf("app does not depend_on %s", dep)
			continue
		}
		if d.Condition != types.ServiceConditionHealthy {
			t.Errorf("app depends_on %s with condition %q, want %q", dep, d.Condition, types.ServiceConditionHealthy)
		}
	}
}

func TestComposeAppPortBuildAndHealthCheck(t *testing.T) {
	app := composeService(t, loadCompose(t), "app")

	published := false
	for _, port := range app.Ports {
		if port.Target == 8080 && port.Published == "8080" {
			published = true
		}
	}
	if !published {
		t.Errorf("app does not publish 8080:8080 (ports: %+v)", app.Ports)
	}

	wd := repoRoot(t)
	if app.Build == nil {
		t.Fatal("app has no build section; want build: .")
	}
	if filepath.Clean(app.Build.Context) != wd {
		t.Errorf("app builds from context %q, want the repository root %q", app.Build.Context, wd)
	}
	dockerfile := app.Build.Dockerfile
	if dockerfile == "" {
		dockerfile = "Dockerfile"
	}
	if !filepath.IsAbs(dockerfile) {
		dockerfile = filepath.Join(app.Build.Context, dockerfile)
	}
	if dockerfile != filepath.Join(wd, "Dockerfile") {
		t.Errorf("app builds with %q, want the Dockerfile at the repository root", dockerfile)
	}

	test := strings.Join(app.HealthCheck.Test, " ")
	if !strings.Contains(test, "127.0.0.1:8080/readyz") && !strings.Contains(test, "localhost:8080/readyz") {
		t.Errorf("app health check %q does not probe /readyz on port 8080", test)
	}
	// The final image must contain the program the health check runs.
	if strings.Contains(test, "wget") {
		stages := parseDockerfile(t)
		final := stages[len(stages)-1].image
		if !strings.HasPrefix(final, "alpine") && !strings.HasPrefix(final, "busybox") {
			t.Errorf("app health check runs wget but the final image %q may not have it", final)
		}
	}
}

func TestComposeAppEnvironmentIsConfig(t *testing.T) {
	p := loadCompose(t)
	app := composeService(t, p, "app")
	known := readEnvExample(t) // what config.go reads (checked in the root package)

	usesEnvExample := false
	for _, f := range app.EnvFiles {
		if filepath.Base(f.Path) == ".env.example" {
			usesEnvExample = true
		}
	}
	if !usesEnvExample {
		t.Error("app does not use env_file: .env.example")
	}

	env := composeEnvMap(app.Environment) // env_file merged with environment
	for _, name := range sortedNames(env) {
		if _, ok := known[name]; !ok {
			t.Errorf("app gets %s, which .env.example (config.go) does not list", name)
		}
	}

	shutdown := shutdownTimeout(t, env)

	// The URLs must reach the other containers, not the host.
	for name, host := range map[string]string{"DATABASE_URL": "postgres", "REDIS_URL": "redis"} {
		u, err := url.Parse(env[name])
		if err != nil || u.Hostname() != host {
			t.Errorf("app %s=%q: want a URL whose host is the %s service", name, env[name], host)
		}
	}

	if _, port, err := net.SplitHostPort(env["HTTP_ADDR"]); err != nil || port != "8080" {
		t.Errorf("app listens on HTTP_ADDR=%q, but compose publishes and probes 8080", env["HTTP_ADDR"])
	}

	// docker sends SIGKILL after stop_grace_period: the app must finish
	// draining (SHUTDOWN_TIMEOUT) before that.
	if app.StopGracePeriod == nil {
		t.Error("app has no stop_grace_period")
	} else if grace := time.Duration(*app.StopGracePeriod); grace <= shutdown {
		t.Errorf("app stop_grace_period %s must be longer than SHUTDOWN_TIMEOUT %s", grace, shutdown)
	}
}

func TestComposeObservabilityProfile(t *testing.T) {
	// Without the profile, prometheus and grafana do not start.
	plain := loadCompose(t)
	for _, name := range []string{"prometheus", "grafana"} {
		if _, err := plain.GetService(name); err == nil {
			t.Errorf("%s starts without the observability profile", name)
		}
	}

	p := loadCompose(t, "observability")
	for _, name := range []string{"prometheus", "grafana"} {
		if s := composeService(t, p, name); !slices.Contains(s.Profiles, "observability") {
			t.Errorf("%s profiles %v, want observability", name, s.Profiles)
		}
	}

	wd := repoRoot(t)
	want := filepath.Join(wd, "deploy", "observability", "prometheus.yml")
	mounted := false
	for _, v := range composeService(t, p, "prometheus").Volumes {
		if v.Source == want && v.Target == "/etc/prometheus/prometheus.yml" {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("prometheus does not mount %s at /etc/prometheus/prometheus.yml", want)
	}
	// Grafana gets the provisioning files and the dashboards directory that
	// observability/grafana/provisioning/dashboards/dashboards.yml points at.
	grafanaMounts := map[string]string{
		"/etc/grafana/provisioning": filepath.Join(wd, "deploy", "observability", "grafana", "provisioning"),
		"/etc/grafana/dashboards":   filepath.Join(wd, "deploy", "observability", "grafana"),
	}
	for _, v := range composeService(t, p, "grafana").Volumes {
		if grafanaMounts[v.Target] == v.Source {
			delete(grafanaMounts, v.Target)
		}
	}
	for target, source := range grafanaMounts {
		t.Errorf("grafana does not mount %s at %s", source, target)
	}

	cfg, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"app:8080", "/metrics", "scrape_interval: 5s"} {
		if !strings.Contains(string(cfg), s) {
			t.Errorf("observability/prometheus.yml does not contain %q", s)
		}
	}
}

// dockerStage is one FROM ... section of the Dockerfile.
type dockerStage struct {
	image, name  string
	instructions []string // "INSTRUCTION args", continuation lines joined
}

// parseDockerfile splits the Dockerfile into stages. It understands comments,
// blank lines and backslash continuations, which is all this Dockerfile uses.
func parseDockerfile(t *testing.T) []dockerStage {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var stages []dockerStage
	var cur strings.Builder
	flush := func() {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			return
		}
		fields := strings.Fields(line)
		if strings.EqualFold(fields[0], "FROM") {
			st := dockerStage{}
			args := slices.DeleteFunc(fields[1:], func(s string) bool { return strings.HasPrefix(s, "--") })
			if len(args) > 0 {
				st.image = args[0]
			}
			if len(args) == 3 && strings.EqualFold(args[1], "AS") {
				st.name = args[2]
			}
			stages = append(stages, st)
			return
		}
		if len(stages) == 0 {
			if !strings.EqualFold(fields[0], "ARG") {
				t.Errorf("Dockerfile: %q before the first FROM", line)
			}
			return
		}
		last := &stages[len(stages)-1]
		last.instructions = append(last.instructions, strings.ToUpper(fields[0])+" "+strings.Join(fields[1:], " "))
	}
	for raw := range strings.SplitSeq(string(data), "\n") {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "#") {
			continue
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(line)
		flush()
	}
	flush()
	return stages
}

// args returns the arguments of every instruction named instr in the stage.
func (s dockerStage) args(instr string) []string {
	var out []string
	for _, in := range s.instructions {
		if rest, ok := strings.CutPrefix(in, instr+" "); ok {
			out = append(out, rest)
		}
	}
	return out
}

func TestDockerfile(t *testing.T) {
	stages := parseDockerfile(t)
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d FROM stages, want a multi-stage build (at least 2)", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]

	// The build stage uses the Go release go.mod asks for.
	gomod, err := os.ReadFile(filepath.Join(repoRoot(t), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod); m == nil {
		t.Error("go.mod has no go directive")
	} else if want := "golang:" + string(m[1]); !strings.HasPrefix(build.image, want) {
		t.Errorf("build stage image %q, want %s-* to match go.mod", build.image, want)
	}

	staticBuild := false
	for _, st := range stages[:len(stages)-1] {
		for _, run := range st.args("RUN") {
			if strings.Contains(run, "go build") && strings.Contains(run, "CGO_ENABLED=0") {
				staticBuild = true
			}
		}
		for _, env := range st.args("ENV") {
			if strings.Contains(env, "CGO_ENABLED=0") || strings.Contains(env, "CGO_ENABLED 0") {
				staticBuild = true
			}
		}
	}
	if !staticBuild {
		t.Error("Dockerfile does not build with CGO_ENABLED=0 (a static binary that runs in the small final image)")
	}

	// A base image its project still supports: Alpine 3.22 or later (3.20
	// and 3.21 are past their end of support), or distroless.
	if v, ok := strings.CutPrefix(final.image, "alpine:"); ok {
		var major, minor int
		if _, err := fmt.Sscanf(v, "%d.%d", &major, &minor); err != nil || major < 3 || (major == 3 && minor < 22) {
			t.Errorf("final image %q: want alpine:3.22 or later (a supported release)", final.image)
		}
	} else if !strings.HasPrefix(final.image, "gcr.io/distroless/") {
		t.Errorf("final image %q: want alpine:3.22+ or gcr.io/distroless", final.image)
	}

	users := final.args("USER")
	if len(users) == 0 {
		t.Error("final stage sets no USER: the app would run as root")
	} else {
		user := strings.SplitN(users[len(users)-1], ":", 2)[0]
		if user == "" || user == "root" || user == "0" {
			t.Errorf("final stage USER %q is root", users[len(users)-1])
		}
	}

	exposed := false
	for _, e := range final.args("EXPOSE") {
		for _, port := range strings.Fields(e) {
			if port == "8080" || port == "8080/tcp" {
				exposed = true
			}
		}
	}
	if !exposed {
		t.Error("final stage does not EXPOSE 8080")
	}

	if len(final.args("ENTRYPOINT")) == 0 && len(final.args("CMD")) == 0 {
		t.Error("final stage has no ENTRYPOINT")
	}

	copied := false
	for _, c := range final.args("COPY") {
		if build.name != "" && strings.Contains(c, "--from="+build.name) {
			copied = true
		}
	}
	if !copied {
		t.Errorf("final stage does not COPY --from=%s (the build stage needs an AS name)", build.name)
	}
}

// loadComposeWith is loadCompose with a host environment for interpolation.
func loadComposeWith(t *testing.T, env map[string]string, profiles ...string) *types.Project {
	t.Helper()
	wd := repoRoot(t)
	details := types.ConfigDetails{
		WorkingDir:  wd,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(wd, "docker-compose.yml")}},
		Environment: types.Mapping(env),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	project, err := loader.LoadWithContext(ctx, details, func(o *loader.Options) { o.Profiles = profiles })
	if err != nil {
		t.Fatalf("load docker-compose.yml: %v", err)
	}
	return project
}

// TestComposeTracingProfile: Jaeger starts only with the tracing profile,
// takes OTLP/HTTP on 4318, shows its UI on the host's loopback only; the
// app sends it traces when OTEL_EXPORTER_OTLP_ENDPOINT names it and has
// tracing off otherwise.
func TestComposeTracingProfile(t *testing.T) {
	plain := loadCompose(t)
	if _, err := plain.GetService("jaeger"); err == nil {
		t.Error("jaeger starts without the tracing profile")
	}
	if got := composeEnvMap(composeService(t, plain, "app").Environment)["OTEL_EXPORTER_OTLP_ENDPOINT"]; got != "" {
		t.Errorf("app OTEL_EXPORTER_OTLP_ENDPOINT=%q by default, want empty (tracing off)", got)
	}

	p := loadComposeWith(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4318"}, "tracing")
	jaeger := composeService(t, p, "jaeger")
	if !slices.Contains(jaeger.Profiles, "tracing") || !strings.Contains(jaeger.Image, "jaeger") {
		t.Errorf("jaeger: profiles %v image %q, want a Jaeger image in the tracing profile", jaeger.Profiles, jaeger.Image)
	}
	ports := map[uint32]bool{}
	for _, port := range jaeger.Ports {
		ports[port.Target] = true
		if port.Published != "" && port.HostIP != "127.0.0.1" {
			t.Errorf("jaeger publishes %d on %q, want 127.0.0.1", port.Target, port.HostIP)
		}
	}
	if !ports[16686] || !ports[4318] {
		t.Errorf("jaeger ports %v: want the UI (16686) and OTLP/HTTP (4318)", jaeger.Ports)
	}
	endpoint := composeEnvMap(composeService(t, p, "app").Environment)["OTEL_EXPORTER_OTLP_ENDPOINT"]
	if u, err := url.Parse(endpoint); err != nil || u.Hostname() != "jaeger" || u.Port() != "4318" {
		t.Errorf("app OTEL_EXPORTER_OTLP_ENDPOINT=%q with the tracing profile, want http://jaeger:4318", endpoint)
	}
}

// TestComposeSettingsInDotEnvWin: a value the user puts in .env reaches the
// app, for the settings compose also sets itself. `environment:` beats
// `env_file:`, so a value written there plainly (API_KEYS was the demo
// key) ignored the user's .env: their own API_KEYS never took effect.
// Compose interpolates ${VAR:-default} from .env, which the loader is given
// here as the host environment.
func TestComposeSettingsInDotEnvWin(t *testing.T) {
	userEnv := map[string]string{"API_KEYS": "my-own-key-0123456789", "ADMIN_ADDR": "off", "ADMIN_TOKEN": "my-own-admin-token-0123"}
	for _, tc := range []struct {
		service, profile string
		defaults         map[string]string // without a .env
	}{
		{"app", "", map[string]string{"API_KEYS": "demo-write-key-change-me", "ADMIN_ADDR": ":8081", "ADMIN_TOKEN": "demo-admin-token-change-me"}},
		{"app-scale", "scale", map[string]string{"API_KEYS": "demo-write-key-change-me"}},
	} {
		var profiles []string
		if tc.profile != "" {
			profiles = []string{tc.profile}
		}
		defaults := composeEnvMap(composeService(t, loadComposeWith(t, nil, profiles...), tc.service).Environment)
		own := composeEnvMap(composeService(t, loadComposeWith(t, userEnv, profiles...), tc.service).Environment)
		for name, def := range tc.defaults {
			if defaults[name] != def {
				t.Errorf("%s %s=%q without a .env, want %q", tc.service, name, defaults[name], def)
			}
			if own[name] != userEnv[name] {
				t.Errorf("%s %s=%q with %s=%q in .env, want the user's value", tc.service, name, own[name], name, userEnv[name])
			}
		}
	}
}
