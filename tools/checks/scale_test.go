package checks

// Checks of the compose `scale` profile (a fleet behind HAProxy, a Redis
// Cluster, PgBouncer) and of the HAProxy and PgBouncer files it mounts,
// without Docker: the pieces must agree with each other and with the
// app's settings (.env.example).

import (
	"bufio"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
)

var redisNodes = []string{"redis-node-1", "redis-node-2", "redis-node-3", "redis-node-4", "redis-node-5", "redis-node-6"}

// scaleServices are the services only the scale profile starts.
var scaleServices = append([]string{"redis-cluster-init", "pgbouncer", "app-scale", "balancer"}, redisNodes...)

func TestScaleProfileOnlyWhenAsked(t *testing.T) {
	plain := loadCompose(t)
	for _, name := range scaleServices {
		if _, err := plain.GetService(name); err == nil {
			t.Errorf("%s starts without the scale profile", name)
		}
	}
	p := loadCompose(t, "scale")
	for _, name := range scaleServices {
		if s := composeService(t, p, name); !slices.Contains(s.Profiles, "scale") {
			t.Errorf("%s profiles %v, want scale", name, s.Profiles)
		}
	}
}

// TestScaleRedisCluster: six redis:7 nodes in cluster mode, announcing
// their hostnames, and a one-shot service that waits for all six and forms
// 3 masters + 3 replicas from exactly them.
func TestScaleRedisCluster(t *testing.T) {
	p := loadCompose(t, "scale")
	for _, name := range redisNodes {
		s := composeService(t, p, name)
		cmd := strings.Join(s.Command, " ")
		if !strings.HasPrefix(s.Image, "redis:7") || !strings.Contains(cmd, "--cluster-enabled yes") {
			t.Errorf("%s: image %q command %q, want redis:7 with --cluster-enabled yes", name, s.Image, cmd)
		}
		if !strings.Contains(cmd, "--cluster-announce-hostname "+name) {
			t.Errorf("%s: command %q does not announce its own hostname", name, cmd)
		}
		if s.HealthCheck == nil || len(s.HealthCheck.Test) < 2 {
			t.Errorf("%s: no health check (redis-cluster-init waits for it)", name)
		}
	}
	init := composeService(t, p, "redis-cluster-init")
	for _, name := range redisNodes {
		if d, ok := init.DependsOn[name]; !ok || d.Condition != types.ServiceConditionHealthy {
			t.Errorf("redis-cluster-init does not wait for a healthy %s", name)
		}
	}
	if init.Restart != "" && init.Restart != "no" {
		t.Errorf("redis-cluster-init restart %q: a one-shot job must not restart", init.Restart)
	}
	script := mountedFile(t, init, "/deploy/redis-cluster-init.sh")
	if !strings.Contains(strings.Join(init.Entrypoint, " "), "/deploy/redis-cluster-init.sh") {
		t.Errorf("redis-cluster-init entrypoint %q does not run the script", init.Entrypoint)
	}
	for _, want := range []string{"--cluster create", "--cluster-replicas 1", "--cluster-yes", "cluster_state:ok"} {
		if !strings.Contains(script, want) {
			t.Errorf("deploy/redis-cluster-init.sh: no %q", want)
		}
	}
	m := regexp.MustCompile(`(?m)^nodes="([^"]*)"`).FindStringSubmatch(script)
	if m == nil || !slices.Equal(strings.Fields(m[1]), redisNodes) {
		t.Errorf("deploy/redis-cluster-init.sh nodes: got %q, want %q", m, redisNodes)
	}
}

// TestScaleFleet: several replicas of the app, on PgBouncer and the
// cluster, each setting one that config.go reads, draining before the
// balancer's checks give up on it and before Docker kills it.
func TestScaleFleet(t *testing.T) {
	p := loadCompose(t, "scale")
	app := composeService(t, p, "app-scale")
	known := readEnvExample(t)
	env := composeEnvMap(app.Environment)
	for _, name := range sortedNames(env) {
		if _, ok := known[name]; !ok {
			t.Errorf("app-scale gets %s, which .env.example (config.go) does not list", name)
		}
	}
	replicas := 0
	if app.Deploy != nil && app.Deploy.Replicas != nil {
		replicas = *app.Deploy.Replicas
	}
	if replicas < 2 {
		t.Fatalf("app-scale: %d replicas, want several", replicas)
	}
	if got := env["EXPECTED_INSTANCES"]; got != strconv.Itoa(replicas) {
		t.Errorf("app-scale EXPECTED_INSTANCES=%q, want the replica count %d (the pool sizing check)", got, replicas)
	}
	if env["DB_POOLER"] != "pgbouncer" {
		t.Errorf("app-scale DB_POOLER=%q, want pgbouncer", env["DB_POOLER"])
	}
	for name, host := range map[string]string{"DATABASE_URL": "pgbouncer", "DATABASE_DIRECT_URL": "postgres"} {
		if u, err := url.Parse(env[name]); err != nil || u.Hostname() != host {
			t.Errorf("app-scale %s=%q: want the %s service", name, env[name], host)
		}
	}
	var seeds []string
	for _, a := range strings.Split(env["REDIS_CLUSTER_ADDRS"], ",") {
		seeds = append(seeds, strings.Split(a, ":")[0])
	}
	if !slices.Equal(seeds, redisNodes) {
		t.Errorf("app-scale REDIS_CLUSTER_ADDRS hosts %q, want %q", seeds, redisNodes)
	}
	for dep, cond := range map[string]string{
		"redis-cluster-init": types.ServiceConditionCompletedSuccessfully, "seed": types.ServiceConditionCompletedSuccessfully,
		"postgres": types.ServiceConditionHealthy, "pgbouncer": types.ServiceConditionStarted,
	} {
		if d, ok := app.DependsOn[dep]; !ok || d.Condition != cond {
			t.Errorf("app-scale depends_on %s: got %+v, want condition %s", dep, d, cond)
		}
	}

	drain := envDuration(t, env, "SHUTDOWN_DRAIN_DELAY")
	shutdown := shutdownTimeout(t, env)
	if app.StopGracePeriod == nil || time.Duration(*app.StopGracePeriod) <= drain+shutdown {
		t.Errorf("app-scale stop_grace_period %v must be longer than SHUTDOWN_DRAIN_DELAY %s + SHUTDOWN_TIMEOUT %s", app.StopGracePeriod, drain, shutdown)
	}
	hc := haproxyConfig(t)
	if noticed := hc.inter * time.Duration(hc.fall); drain <= noticed {
		t.Errorf("SHUTDOWN_DRAIN_DELAY %s: HAProxy needs %d failed checks %s apart (%s) to stop sending; drain longer", drain, hc.fall, hc.inter, noticed)
	}

	// The app believes X-Forwarded-For from the balancer, and only from it.
	bal := composeService(t, p, "balancer")
	var balIP netip.Addr
	for _, n := range bal.Networks {
		if n != nil && n.Ipv4Address != "" {
			balIP, _ = netip.ParseAddr(n.Ipv4Address)
		}
	}
	trusted, err := netip.ParsePrefix(env["TRUSTED_PROXIES"])
	if err != nil || !balIP.IsValid() || !trusted.Contains(balIP) || trusted.Bits() != 32 {
		t.Errorf("app-scale TRUSTED_PROXIES=%q, want exactly the balancer's fixed address %v", env["TRUSTED_PROXIES"], balIP)
	}
}

// TestScaleBalancer: HAProxy (open source: active checks) probes every
// replica's /readyz and sends traffic only to those answering 200.
func TestScaleBalancer(t *testing.T) {
	p := loadCompose(t, "scale")
	bal := composeService(t, p, "balancer")
	if !strings.HasPrefix(bal.Image, "haproxy:") {
		t.Errorf("balancer image %q, want the official haproxy image", bal.Image)
	}
	mountedFile(t, bal, "/usr/local/etc/haproxy/haproxy.cfg")
	published := false
	for _, port := range bal.Ports {
		published = published || port.Target == 8080 && port.Published != ""
	}
	if !published {
		t.Errorf("balancer publishes no port to its :8080 (ports %+v)", bal.Ports)
	}
	hc := haproxyConfig(t)
	if hc.check != "GET /readyz" || hc.expect != "status 200" {
		t.Errorf("haproxy backend: option httpchk %q, http-check expect %q; want GET /readyz, status 200", hc.check, hc.expect)
	}
	if hc.target != "app-scale:8080" || !hc.checked {
		t.Errorf("haproxy backend servers: %q (check %v), want app-scale:8080 with check", hc.target, hc.checked)
	}
	if !hc.forwardFor {
		t.Error("haproxy: no option forwardfor; the app's per-IP limits would see only the balancer")
	}
}

// TestScalePgBouncer: PgBouncer in transaction pooling, with room for the
// whole fleet's pools as clients and a server pool that fits PostgreSQL.
func TestScalePgBouncer(t *testing.T) {
	p := loadCompose(t, "scale")
	pgb := composeService(t, p, "pgbouncer")
	if !strings.HasPrefix(pgb.Image, "edoburu/pgbouncer:") {
		t.Errorf("pgbouncer image %q, want edoburu/pgbouncer", pgb.Image)
	}
	ini := parseINI(mountedFile(t, pgb, "/etc/pgbouncer/pgbouncer.ini"))
	mountedFile(t, pgb, "/etc/pgbouncer/userlist.txt")
	pb := ini["pgbouncer"]
	if pb["pool_mode"] != "transaction" {
		t.Errorf("pool_mode %q, want transaction (DB_POOLER=pgbouncer)", pb["pool_mode"])
	}
	num := func(k string) int {
		n, err := strconv.Atoi(pb[k])
		if err != nil {
			t.Fatalf("pgbouncer.ini %s=%q: %v", k, pb[k], err)
		}
		return n
	}
	app := composeService(t, p, "app-scale")
	env := composeEnvMap(app.Environment)
	atoi := func(k string) int { n, _ := strconv.Atoi(env[k]); return n }
	clients := *app.Deploy.Replicas * (atoi("DB_MAIN_MAX_CONNS") + atoi("DB_REPORTS_MAX_CONNS"))
	if clients == 0 || num("max_client_conn") < clients {
		t.Errorf("max_client_conn %d < the fleet's pools %d (replicas × (DB_MAIN_MAX_CONNS + DB_REPORTS_MAX_CONNS))", num("max_client_conn"), clients)
	}
	if s := num("default_pool_size") + num("reserve_pool_size"); s > num("max_db_connections") || num("max_db_connections") >= 100-10 {
		t.Errorf("server side: default_pool_size + reserve_pool_size = %d, max_db_connections %d: want the pools within it, and it below max_connections (100) less headroom", s, num("max_db_connections"))
	}
	db := ini["databases"]["stampede"]
	if !strings.Contains(db, "host=postgres") || !strings.Contains(db, "statement_timeout") {
		t.Errorf("[databases] stampede = %q: want host=postgres and a connect_query setting statement_timeout (PgBouncer drops the app's)", db)
	}
}

// mountedFile returns the repository file mounted at target in s.
func mountedFile(t *testing.T, s types.ServiceConfig, target string) string {
	t.Helper()
	for _, v := range s.Volumes {
		if v.Target != target {
			continue
		}
		rel, err := filepath.Rel(repoRoot(t), v.Source)
		if err != nil || strings.HasPrefix(rel, "..") || !strings.HasPrefix(rel, "deploy"+string(filepath.Separator)) {
			t.Errorf("%s mounts %s from %s, want a file under deploy/", s.Name, target, v.Source)
		}
		b, err := os.ReadFile(v.Source)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		return string(b)
	}
	t.Fatalf("%s mounts nothing at %s", s.Name, target)
	return ""
}

// shutdownTimeout is the app's SHUTDOWN_TIMEOUT under env: as set, or, left
// empty (as .env.example leaves it, so that it follows), 10 s or
// REQUEST_TIMEOUT when longer (internal/config/follow.go). An empty
// REQUEST_TIMEOUT is 10 s unless inner timeouts grow it, which this check
// does not model: it refuses such an env instead of guessing.
func shutdownTimeout(t *testing.T, env map[string]string) time.Duration {
	t.Helper()
	if env["SHUTDOWN_TIMEOUT"] != "" {
		return envDuration(t, env, "SHUTDOWN_TIMEOUT")
	}
	request := 10 * time.Second
	if env["REQUEST_TIMEOUT"] != "" {
		request = max(request, envDuration(t, env, "REQUEST_TIMEOUT"))
	} else {
		for _, inner := range []string{"DB_ACQUIRE_TIMEOUT", "DB_STATEMENT_TIMEOUT", "LOCK_TTL", "LOCK_WAIT", "BODY_READ_TIMEOUT"} {
			if env[inner] != "" {
				t.Fatalf("%s is set while REQUEST_TIMEOUT and SHUTDOWN_TIMEOUT are empty: set SHUTDOWN_TIMEOUT so this check knows the drain", inner)
			}
		}
	}
	return request
}

func envDuration(t *testing.T, env map[string]string, name string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(env[name])
	if err != nil {
		t.Fatalf("%s=%q: %v", name, env[name], err)
	}
	return d
}

// haproxyBackend is what the checks need of deploy/haproxy.cfg's backend.
type haproxyBackend struct {
	check, expect, target string
	checked, forwardFor   bool
	inter                 time.Duration
	fall                  int
}

// haproxyConfig reads deploy/haproxy.cfg: sections start at column 0,
// their keywords are indented, # starts a comment.
func haproxyConfig(t *testing.T) haproxyBackend {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot(t), "deploy", "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var hb haproxyBackend
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "\t") {
			section = strings.Join(fields, " ")
			continue
		}
		rest := strings.Join(fields[1:], " ")
		switch {
		case section == "defaults" && rest == "forwardfor" && fields[0] == "option":
			hb.forwardFor = true
		case section != "backend app":
		case fields[0] == "option" && len(fields) > 1 && fields[1] == "httpchk":
			hb.check = strings.Join(fields[2:], " ")
		case fields[0] == "http-check" && len(fields) > 1 && fields[1] == "expect":
			hb.expect = strings.Join(fields[2:], " ")
		case fields[0] == "default-server":
			for i := 1; i+1 < len(fields); i++ {
				switch fields[i] {
				case "inter":
					hb.inter, _ = time.ParseDuration(fields[i+1])
				case "fall":
					hb.fall, _ = strconv.Atoi(fields[i+1])
				}
			}
		case fields[0] == "server-template" && len(fields) > 3:
			hb.target, hb.checked = fields[3], slices.Contains(fields[4:], "check")
		case fields[0] == "server" && len(fields) > 2:
			hb.target, hb.checked = fields[2], slices.Contains(fields[3:], "check")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if hb.inter <= 0 || hb.fall <= 0 {
		t.Fatalf("deploy/haproxy.cfg: backend app needs default-server inter and fall (got %s, %d)", hb.inter, hb.fall)
	}
	return hb
}

// parseINI reads an ini file as PgBouncer does: [section], key = value,
// ';' or '#' starting a comment line.
func parseINI(s string) map[string]map[string]string {
	out := map[string]map[string]string{}
	section := ""
	for raw := range strings.SplitSeq(s, "\n") {
		line := strings.TrimSpace(raw)
		switch {
		case line == "" || strings.HasPrefix(line, ";") || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			out[section] = map[string]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if ok && section != "" {
				out[section][strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
	}
	return out
}
