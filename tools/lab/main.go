// Command lab runs the stampede experiments against the real service: it
// starts N instances of bin/api as separate processes on the local
// PostgreSQL and Redis, puts a controllable TCP proxy on the database link
// (and on the Redis link when Redis must fail), each in a process of its
// own (link.go), fires concurrent requests,
// counts the database's queries from PostgreSQL's own statistics, and prints
// a before/after table per experiment. Nothing it prints is written in
// advance: every figure comes from the run.
//
//	go build -o bin/api . && go run ./lab -out lab-results
//
// It is not part of `go test`: a run takes minutes and needs the services.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisDB is the Redis logical database the lab owns and flushes; the test
// suites use lower numbers.
const redisDB = 10

// Lab holds what every experiment shares: the services, the proxies and the
// migrated template database.
type Lab struct {
	bin         string
	logDir      string
	pg          *PG
	rdb         *redis.Client // direct, on redisDB
	redisAddr   string
	dbProxy     *Link
	redisProxy  *Link
	template    string
	instances   int
	perInstance int
	delay       time.Duration
	// catalogueSizes are the product counts of the catalogue experiment.
	catalogueSizes []int
	// filterLoadTimed: a cluster is ready before its unknown-id filter has
	// loaded (the catalogue experiment times the load). Otherwise a
	// cluster waits for it, so the load's queries precede every count.
	filterLoadTimed bool
	stdout          io.Writer
}

// experiment is one named experiment of the lab.
type experiment struct {
	name string
	run  func(*Lab, context.Context) *Experiment
}

var experiments = []experiment{
	{"sanity", (*Lab).sanity},
	{"cold-key", (*Lab).coldKey},
	{"lock-ttl", (*Lab).lockTTL},
	{"holder-crash", (*Lab).holderCrash},
	{"swr", (*Lab).swr},
	{"db-down", (*Lab).dbDown},
	{"db-blip", (*Lab).dbBlip},
	{"overload", (*Lab).overload},
	{"admission", (*Lab).admission},
	{"redis-down", (*Lab).redisDown},
	{"cluster", (*Lab).redisClusterExp},
	{"hot-key", (*Lab).hotKey},
	{"refusal", (*Lab).refusal},
	{"catalogue", (*Lab).catalogue},
	{"failover", (*Lab).pgFailover},
}

func main() {
	if child, err := runChild(); child {
		if err != nil {
			fmt.Fprintln(os.Stderr, "lab:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
		stop()
		os.Exit(1)
	}
}

// runChild serves, if the environment asks for one, a process the lab
// starts of itself: the hot-key experiment's bare handler, or a database or
// Redis link. Each ends when its stdin closes, which is when the lab ends,
// however it ends; a Ctrl-C (sent to the whole process group) must not cut
// the links while the lab cleans up. child is false for the lab itself.
func runChild() (child bool, err error) {
	if body, ok := os.LookupEnv(bareEnv); ok {
		signal.Ignore(os.Interrupt)
		wait, _ := time.ParseDuration(os.Getenv(bareWaitEnv)) // unset: 0, answer at once
		if err := runBare(body, os.Getenv(bareModeEnv), wait, os.Getenv(bareRedisEnv)); err != nil {
			return true, fmt.Errorf("bare handler: %w", err)
		}
		return true, nil
	}
	if target, ok := os.LookupEnv(linkEnv); ok {
		signal.Ignore(os.Interrupt)
		if err := runLink(target, os.Getenv(linkPGEnv) == "true"); err != nil {
			return true, fmt.Errorf("link: %w", err)
		}
		return true, nil
	}
	return false, nil
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("lab", flag.ContinueOnError)
	var names []string
	for _, e := range experiments {
		names = append(names, e.name)
	}
	instances := fs.Int("instances", 5, "service instances per cluster")
	perInstance := fs.Int("per-instance", 200, "concurrent requests per instance in a burst")
	delay := fs.Duration("delay", 300*time.Millisecond, "delay added to each round trip on the database link")
	out := fs.String("out", "lab-results", "directory for results.json, the SVG charts and the instances' logs")
	only := fs.String("only", "", "run only these experiments (comma-separated): "+strings.Join(names, ", "))
	bin := fs.String("bin", "bin/api", "service binary (go build -o bin/api .)")
	pgURL := fs.String("pg", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "PostgreSQL URL: the lab makes databases of its own on this server, through its maintenance database postgres")
	soakFor := fs.Duration("soak", 0, "instead of the experiments, soak 3 instances for this long under a mixed load with rotating faults (soak.go)")
	soakRate := fs.Float64("soak-rate", 200, "requests per second of the soak's load")
	redisAddr := fs.String("redis", "127.0.0.1:6379", "Redis host:port or redis:// URL (the lab always uses logical database 10)")
	catalogue := fs.String("catalogue", "1000,1000000", "product counts of the catalogue experiment (comma-separated; make lab-scale adds 10000000)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	if strings.Contains(*redisAddr, "://") {
		opt, err := redis.ParseURL(*redisAddr)
		if err != nil {
			return fmt.Errorf("-redis: %w", err)
		}
		*redisAddr = opt.Addr
	}
	var chosen []string
	for _, name := range strings.Split(*only, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		if !slices.Contains(names, name) {
			return fmt.Errorf("-only %q: want one of %s", name, strings.Join(names, ", "))
		}
		chosen = append(chosen, name)
	}
	sizes, err := parseSizes(*catalogue)
	if err != nil {
		return fmt.Errorf("-catalogue: %w", err)
	}
	if *instances < 1 || *perInstance < 1 || *delay < 0 {
		return errors.New("-instances and -per-instance must be positive, -delay not negative")
	}
	begin := time.Now()

	// ---- Services and proxies ----------------------------------------------
	binPath, err := filepath.Abs(*bin)
	if err != nil {
		return err
	}
	if _, err := os.Stat(binPath); err != nil {
		return fmt.Errorf("%s: build it first with `go build -o bin/api .`: %w", binPath, err)
	}
	logDir := filepath.Join(*out, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	l := &Lab{
		bin: binPath, logDir: logDir, pg: &PG{admin: maintenanceURL(*pgURL)}, redisAddr: *redisAddr,
		instances: *instances, perInstance: *perInstance, delay: *delay, stdout: stdout, catalogueSizes: sizes,
	}
	pgHost, err := hostOf(*pgURL)
	if err != nil {
		return err
	}
	busy, err := l.pg.Backends(ctx, "")
	if err != nil {
		return fmt.Errorf("PostgreSQL at %s: %w", pgHost, err)
	}
	l.rdb = redis.NewClient(&redis.Options{Addr: *redisAddr, DB: redisDB})
	defer l.rdb.Close()
	if err := l.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis at %s: %w", *redisAddr, err)
	}
	if err := claimRedis(ctx, l.rdb); err != nil {
		return fmt.Errorf("redis at %s: %w", *redisAddr, err)
	}
	if l.dbProxy, err = NewLink(pgHost, true); err != nil {
		return err
	}
	defer l.dbProxy.Close()
	if l.redisProxy, err = NewLink(*redisAddr, false); err != nil {
		return err
	}
	defer l.redisProxy.Close()
	if *soakFor == 0 {
		fmt.Fprintf(stdout, "stampede-guard lab: %d instances × %d requests, %s on the database link, binary %s\n",
			*instances, *perInstance, *delay, *bin)
	}
	fmt.Fprintf(stdout, "PostgreSQL %s (%d other sessions connected), Redis %s db %d, logs in %s\n\n",
		pgHost, busy, *redisAddr, redisDB, logDir)

	// ---- Template: migrate once, copy per cluster ---------------------------
	if err := l.makeTemplate(ctx); err != nil {
		return err
	}
	defer func() {
		_ = l.pg.DropDatabase(context.Background(), l.template)
		// The lab's Redis database, left empty but for its mark.
		_ = flushRedis(context.Background(), l.rdb)
	}()

	if *soakFor > 0 {
		return l.runSoak(ctx, *soakFor, *soakRate, *out)
	}

	// ---- Experiments ---------------------------------------------------------
	report := &Report{Started: begin.UTC().Format(time.RFC3339), Instances: *instances,
		PerInstance: *perInstance, DelayMs: ms(*delay), Binary: *bin}
	for _, e := range experiments {
		if len(chosen) > 0 && !slices.Contains(chosen, e.name) {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		t0 := time.Now()
		x := e.run(l, ctx)
		x.Name = e.name
		x.Seconds = time.Since(t0).Round(100 * time.Millisecond).Seconds()
		x.print(stdout)
		report.Experiments = append(report.Experiments, x)
	}
	report.TotalSeconds = time.Since(begin).Round(100 * time.Millisecond).Seconds()

	// ---- Results ---------------------------------------------------------------
	files, err := report.write(*out)
	if err != nil {
		return err
	}
	failed := report.summary(stdout)
	fmt.Fprintf(stdout, "wrote %s\n", strings.Join(files, ", "))
	fmt.Fprintf(stdout, "total time %s\n", time.Since(begin).Round(100*time.Millisecond))
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if failed > 0 {
		return fmt.Errorf("%d experiment(s) did not complete", failed)
	}
	return nil
}

// makeTemplate creates a database, lets one instance migrate it (1000
// products) and seeds it with `api seed` (50 000 orders). Every cluster then gets
// a copy: fast, and its statistics start at zero, so the seed's own index
// scans never mix with an experiment's. The server is shared with other
// work, so a failed attempt is retried once on a new database.
func (l *Lab) makeTemplate(ctx context.Context) error {
	var err error
	for attempt := 1; attempt <= 2; attempt++ {
		l.template = "lab_template_" + randomHex(4)
		if err = l.migrateTemplate(ctx); err == nil || ctx.Err() != nil {
			return err
		}
		_ = l.pg.DropDatabase(context.Background(), l.template)
		fmt.Fprintf(l.stdout, "warning: template attempt %d: %v\n", attempt, err)
	}
	return err
}

func (l *Lab) migrateTemplate(ctx context.Context) error {
	if err := l.pg.CreateDatabase(ctx, l.template, ""); err != nil {
		return err
	}
	c := &Cluster{lab: l, Name: "template", DB: l.template, Env: maps.Clone(baseEnv)}
	c.Env["HTTP_ADDR"] = "127.0.0.1:0"
	c.Env["DATABASE_URL"] = l.pg.url(l.template, "")
	c.Env["REDIS_URL"] = fmt.Sprintf("redis://%s/%d", l.redisAddr, redisDB)
	inst, err := l.startInstance(ctx, c, 0)
	if inst != nil {
		c.Instances = append(c.Instances, inst)
	}
	if err == nil {
		err = c.waitReady(ctx)
	}
	c.Stop()
	if err != nil {
		return fmt.Errorf("migrate the template database: %w", err)
	}
	// The demo orders (the reports' data) come from `api seed`, not from
	// the migrations.
	seed := exec.CommandContext(ctx, l.bin, "seed")
	seed.Env = append(os.Environ(), "DATABASE_URL="+c.Env["DATABASE_URL"])
	if out, err := seed.CombinedOutput(); err != nil {
		return fmt.Errorf("seed the template database: %w\n%s", err, out)
	}
	return l.pg.WaitNoBackends(ctx, l.template, 20*time.Second)
}

func hostOf(pgURL string) (string, error) {
	u, err := url.Parse(pgURL)
	if err != nil || u.Hostname() == "" {
		return "", fmt.Errorf("-pg %q: want postgres://user@host:port/db", pgURL)
	}
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "5432"), nil
	}
	return u.Host, nil
}

// maintenanceURL is pgURL pointed at the server's maintenance database
// "postgres": the lab creates its own databases there, whichever database
// (the app's own, perhaps not made yet) the URL named.
func maintenanceURL(pgURL string) string {
	u, err := url.Parse(pgURL)
	if err != nil {
		return pgURL // hostOf reports it
	}
	u.Path = "/postgres"
	return u.String()
}

// parseSizes reads a comma-separated list of product counts, each ≥ 1000
// (the migrations seed 1 000).
func parseSizes(list string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1000 {
			return nil, fmt.Errorf("%q: want a count of at least 1000", f)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}
