package checks

// Checks of the Kubernetes manifests in deploy/k8s without a cluster: each
// one is decoded strictly (an unknown or misspelt field fails) into the
// real API type of its kind, then the pieces are held to each other and to
// the app's settings. The ConfigMap is generated from .env.example:
//
//	go test ./checks -run TestK8sConfigMap -update-configmap

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

var updateConfigMap = flag.Bool("update-configmap", false, "rewrite deploy/k8s/configmap.yaml from .env.example")

// k8sOverrides are the ConfigMap's values that differ from .env.example's
// defaults on Kubernetes. Secrets are empty here: the Deployment takes
// them from the Secret "stampede-guard", which overrides these entries.
var k8sOverrides = map[string]string{
	"DATABASE_URL":         "", // Secret: PgBouncer's address
	"DATABASE_DIRECT_URL":  "", // Secret: PostgreSQL's, for migrations
	"API_KEYS":             "", // Secret
	"ADMIN_TOKEN":          "", // Secret
	"DB_POOLER":            "pgbouncer",
	"REDIS_CLUSTER_ADDRS":  "redis-cluster:6379",
	"EXPECTED_INSTANCES":   "10", // the HPA's maxReplicas
	"STRICT_POOL_SIZING":   "true",
	"HOT_KEY_COPIES":       "3",
	"SHUTDOWN_DRAIN_DELAY": "5s", // the preStop sleep
}

// k8sManifest is one resource file listed in the kustomization.
type k8sManifest struct {
	file string
	data []byte
}

func k8sManifests(t *testing.T) []k8sManifest {
	t.Helper()
	dir := filepath.Join(repoRoot(t), "deploy", "k8s")
	var kust struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, &kust); err != nil || kust.Kind != "Kustomization" {
		t.Fatalf("deploy/k8s/kustomization.yaml: %v (kind %q)", err, kust.Kind)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range files {
		if base := filepath.Base(f); base != "kustomization.yaml" && !slices.Contains(kust.Resources, base) {
			t.Errorf("deploy/k8s/%s is not listed in kustomization.yaml: kubectl apply -k would leave it out", base)
		}
	}
	var out []k8sManifest
	for _, r := range kust.Resources {
		b, err := os.ReadFile(filepath.Join(dir, r))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, k8sManifest{file: r, data: b})
	}
	return out
}

// k8sObjects decodes every manifest strictly into the type of its kind.
type k8sObjects struct {
	deploy    *appsv1.Deployment
	service   *corev1.Service
	configMap *corev1.ConfigMap
	pdb       *policyv1.PodDisruptionBudget
	hpa       *autoscalingv2.HorizontalPodAutoscaler
}

func decodeK8s(t *testing.T) k8sObjects {
	t.Helper()
	var o k8sObjects
	for _, m := range k8sManifests(t) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(m.data, &tm); err != nil {
			t.Fatalf("%s: %v", m.file, err)
		}
		var obj any
		switch gvk := tm.APIVersion + "/" + tm.Kind; gvk {
		case "apps/v1/Deployment":
			obj = fresh(&o.deploy)
		case "v1/Service":
			obj = fresh(&o.service)
		case "v1/ConfigMap":
			obj = fresh(&o.configMap)
		case "policy/v1/PodDisruptionBudget":
			obj = fresh(&o.pdb)
		case "autoscaling/v2/HorizontalPodAutoscaler":
			obj = fresh(&o.hpa)
		default:
			t.Fatalf("%s: unexpected %s", m.file, gvk)
		}
		if err := yaml.UnmarshalStrict(m.data, obj); err != nil {
			t.Fatalf("%s: strict decoding into the Kubernetes type: %v", m.file, err)
		}
	}
	if o.deploy == nil || o.service == nil || o.configMap == nil || o.pdb == nil || o.hpa == nil {
		t.Fatalf("deploy/k8s: want a Deployment, Service, ConfigMap, PodDisruptionBudget and HorizontalPodAutoscaler, got %+v", o)
	}
	return o
}

// fresh points *field at a new zero T and returns it to decode into.
func fresh[T any](field **T) *T {
	*field = new(T)
	return *field
}

// TestK8sStrictDecodingCatchesTypos: the decoding the other tests rely on
// rejects a misspelt field, which a plain YAML decode would drop silently.
func TestK8sStrictDecodingCatchesTypos(t *testing.T) {
	bad := []byte("apiVersion: apps/v1\nkind: Deployment\nspec:\n  replica: 3\n")
	if err := yaml.UnmarshalStrict(bad, &appsv1.Deployment{}); err == nil {
		t.Error(`"replica" (for replicas): got no error, want an unknown-field error`)
	}
}

// TestK8sConfigMap: the ConfigMap's keys are exactly .env.example's
// variables, its values .env.example's defaults except the listed
// Kubernetes overrides, and the file is what the generator writes.
func TestK8sConfigMap(t *testing.T) {
	want := renderConfigMap(t)
	path := filepath.Join(repoRoot(t), "deploy", "k8s", "configmap.yaml")
	if *updateConfigMap {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cm := decodeK8s(t).configMap
	env := readEnvExample(t)
	if got, want := sortedNames(cm.Data), sortedNames(env); !slices.Equal(got, want) {
		t.Errorf("ConfigMap keys differ from .env.example's variables:\n got %q\nwant %q", got, want)
	}
	for k, v := range env {
		if o, ok := k8sOverrides[k]; ok {
			v = o
		}
		if cm.Data[k] != v {
			t.Errorf("ConfigMap %s=%q, want %q", k, cm.Data[k], v)
		}
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
		t.Errorf("deploy/k8s/configmap.yaml is not what the generator writes (%v); run: cd checks && go test -run TestK8sConfigMap -update-configmap", err)
	}
}

// renderConfigMap writes the ConfigMap from .env.example and k8sOverrides.
func renderConfigMap(t *testing.T) []byte {
	t.Helper()
	env := readEnvExample(t)
	for k := range k8sOverrides {
		if _, ok := env[k]; !ok {
			t.Errorf("k8sOverrides names %s, which .env.example does not list", k)
		}
	}
	var b bytes.Buffer
	b.WriteString("# Generated from .env.example by checks/k8s_test.go (-update-configmap): every\n" +
		"# setting at its default, except the Kubernetes overrides listed there.\n" +
		"# Secrets are empty here and come from the Secret stampede-guard.\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stampede-guard\ndata:\n")
	for _, k := range sortedNames(env) {
		v := env[k]
		if o, ok := k8sOverrides[k]; ok {
			v = o
		}
		fmt.Fprintf(&b, "  %s: %s\n", k, strconv.Quote(v))
	}
	return b.Bytes()
}

// TestK8sDeployment: probes on /readyz and /healthz, a preStop sleep of
// SHUTDOWN_DRAIN_DELAY, a grace period that covers the whole shutdown,
// resources, and the ConfigMap and Secret wired in.
func TestK8sDeployment(t *testing.T) {
	o := decodeK8s(t)
	spec := o.deploy.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("got %d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	port := func(p *corev1.Probe) string {
		if p == nil || p.HTTPGet == nil {
			return ""
		}
		return p.HTTPGet.Path + " " + p.HTTPGet.Port.String()
	}
	if got := port(c.ReadinessProbe); got != "/readyz http" {
		t.Errorf("readinessProbe: got %q, want httpGet /readyz on port http", got)
	}
	if got := port(c.LivenessProbe); got != "/healthz http" {
		t.Errorf("livenessProbe: got %q, want httpGet /healthz on port http (never /readyz: an outage must not restart pods)", got)
	}
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "http" && p.ContainerPort == 8080 }) {
		t.Errorf("ports %+v: want http on 8080 (HTTP_ADDR)", c.Ports)
	}
	data := o.configMap.Data
	dur := func(k string) time.Duration {
		d, err := time.ParseDuration(data[k])
		if err != nil {
			t.Fatalf("ConfigMap %s=%q: %v", k, data[k], err)
		}
		return d
	}
	drain, shutdown := dur("SHUTDOWN_DRAIN_DELAY"), shutdownTimeout(t, data)
	var sleep time.Duration
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
		sleep = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	}
	if sleep != drain || sleep <= 0 {
		t.Errorf("preStop sleep %s, want SHUTDOWN_DRAIN_DELAY %s (> 0)", sleep, drain)
	}
	if c.ReadinessProbe != nil {
		if noticed := time.Duration(c.ReadinessProbe.PeriodSeconds*c.ReadinessProbe.FailureThreshold) * time.Second; drain < noticed {
			t.Errorf("SHUTDOWN_DRAIN_DELAY %s is shorter than the readiness probe takes to notice (%s)", drain, noticed)
		}
	}
	grace := time.Duration(0)
	if spec.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
	}
	if grace <= sleep+drain+shutdown {
		t.Errorf("terminationGracePeriodSeconds %s, want more than preStop %s + SHUTDOWN_DRAIN_DELAY %s + SHUTDOWN_TIMEOUT %s", grace, sleep, drain, shutdown)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[r]; !ok {
			t.Errorf("no %s request", r)
		}
		if _, ok := c.Resources.Limits[r]; !ok {
			t.Errorf("no %s limit", r)
		}
	}
	if !slices.ContainsFunc(c.EnvFrom, func(e corev1.EnvFromSource) bool {
		return e.ConfigMapRef != nil && e.ConfigMapRef.Name == o.configMap.Name
	}) {
		t.Errorf("envFrom %+v: want the ConfigMap %s", c.EnvFrom, o.configMap.Name)
	}
	for _, k := range []string{"DATABASE_URL", "DATABASE_DIRECT_URL", "API_KEYS", "ADMIN_TOKEN"} {
		if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
			return e.Name == k && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
		}) {
			t.Errorf("env %s: want it from a Secret", k)
		}
	}
	sel, err := metav1.LabelSelectorAsSelector(o.deploy.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(o.deploy.Spec.Template.Labels)) {
		t.Errorf("Deployment selector %v does not match its pod labels %v", o.deploy.Spec.Selector, o.deploy.Spec.Template.Labels)
	}
}

// TestK8sServicePDBAndHPA: the Service and the PDB select the
// Deployment's pods, the HPA scales it, and its maximum stays within the
// connection budget the ConfigMap declares (EXPECTED_INSTANCES).
func TestK8sServicePDBAndHPA(t *testing.T) {
	o := decodeK8s(t)
	pods := labels.Set(o.deploy.Spec.Template.Labels)
	if sel := labels.SelectorFromSet(o.service.Spec.Selector); len(o.service.Spec.Selector) == 0 || !sel.Matches(pods) {
		t.Errorf("Service selector %v does not select the Deployment's pods %v", o.service.Spec.Selector, pods)
	}
	if len(o.service.Spec.Ports) == 0 || o.service.Spec.Ports[0].TargetPort.String() != "http" {
		t.Errorf("Service ports %+v: want targetPort http", o.service.Spec.Ports)
	}
	if sel, err := metav1.LabelSelectorAsSelector(o.pdb.Spec.Selector); err != nil || sel.Empty() || !sel.Matches(pods) {
		t.Errorf("PDB selector %v does not select the Deployment's pods %v", o.pdb.Spec.Selector, pods)
	}
	if o.pdb.Spec.MinAvailable == nil && o.pdb.Spec.MaxUnavailable == nil {
		t.Error("PDB: neither minAvailable nor maxUnavailable")
	}
	ref := o.hpa.Spec.ScaleTargetRef
	if ref.Kind != "Deployment" || ref.Name != o.deploy.Name || ref.APIVersion != "apps/v1" {
		t.Errorf("HPA scaleTargetRef %+v, want apps/v1 Deployment %s", ref, o.deploy.Name)
	}
	minR := int32(1)
	if o.hpa.Spec.MinReplicas != nil {
		minR = *o.hpa.Spec.MinReplicas
	}
	if minR < 2 {
		t.Errorf("HPA minReplicas %d, want at least 2 (the PDB lets one go)", minR)
	}
	if want := o.configMap.Data["EXPECTED_INSTANCES"]; strconv.Itoa(int(o.hpa.Spec.MaxReplicas)) != want {
		t.Errorf("HPA maxReplicas %d, want EXPECTED_INSTANCES %s: the pool sizing check must count every pod the HPA may start", o.hpa.Spec.MaxReplicas, want)
	}
	if len(o.hpa.Spec.Metrics) == 0 {
		t.Error("HPA: no metrics")
	}
	if strings.TrimSpace(o.configMap.Data["REDIS_CLUSTER_ADDRS"]) == "" || o.configMap.Data["DB_POOLER"] == "none" {
		t.Errorf("ConfigMap: a fleet wants REDIS_CLUSTER_ADDRS and DB_POOLER set, got %q, %q", o.configMap.Data["REDIS_CLUSTER_ADDRS"], o.configMap.Data["DB_POOLER"])
	}
}
