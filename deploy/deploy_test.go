package deploy

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/pgrehearse/pgrehearse/internal/cli"
	"github.com/pgrehearse/pgrehearse/internal/promsink"
)

// manifests decodes every document of deploy/kubernetes strictly into its
// Kubernetes API type: a field the API does not have fails the test.
func manifests(t *testing.T) (jobs map[string]*batchv1.Job, other []any) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("kubernetes", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	jobs = map[string]*batchv1.Job{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			var meta struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
				t.Fatalf("%s #%d: %v", f, i, err)
			}
			var obj any
			switch meta.APIVersion + " " + meta.Kind {
			case "batch/v1 Job":
				obj = &batchv1.Job{}
			case "apps/v1 Deployment":
				obj = &appsv1.Deployment{}
			case "apps/v1 StatefulSet":
				obj = &appsv1.StatefulSet{}
			case "v1 ConfigMap":
				obj = &corev1.ConfigMap{}
			case "v1 Service":
				obj = &corev1.Service{}
			case "v1 Secret":
				obj = &corev1.Secret{}
			case "v1 PersistentVolumeClaim":
				obj = &corev1.PersistentVolumeClaim{}
			default:
				t.Fatalf("%s #%d: %s %s: no API type known to this test", f, i, meta.APIVersion, meta.Kind)
			}
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				t.Fatalf("%s #%d (%s): %v", f, i, meta.Kind, err)
			}
			if j, ok := obj.(*batchv1.Job); ok {
				jobs[j.Name] = j
			} else {
				other = append(other, obj)
			}
		}
	}
	return jobs, other
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func TestStrictDecodeRefusesUnknownFields(t *testing.T) {
	bad := "apiVersion: batch/v1\nkind: Job\nspec:\n  completionsMode: Indexed\n"
	if err := yaml.UnmarshalStrict([]byte(bad), &batchv1.Job{}); err == nil {
		t.Fatal("a misspelt field (completionsMode) decoded: the manifest test would not catch one")
	}
}

func TestShardJob(t *testing.T) {
	jobs, _ := manifests(t)
	for _, name := range []string{"pgrehearse-plan", "pgrehearse-replay", "pgrehearse-merge"} {
		if jobs[name] == nil {
			t.Fatalf("no Job %s", name)
		}
	}
	j := jobs["pgrehearse-replay"].Spec
	if j.CompletionMode == nil || *j.CompletionMode != batchv1.IndexedCompletion {
		t.Error("the shards' Job is not Indexed")
	}
	if j.Completions == nil || j.Parallelism == nil || *j.Completions != *j.Parallelism {
		t.Error("completions and parallelism must be equal: every shard runs at once")
	}
	if j.BackoffLimitPerIndex == nil || *j.BackoffLimitPerIndex != 0 {
		t.Error("backoffLimitPerIndex must be 0: a retried shard would replay its writes twice")
	}
	n := int(*j.Completions)
	args := jobs["pgrehearse-replay"].Spec.Template.Spec.Containers[0].Args
	if !slices.Contains(args, "--shards="+itoa(n)) {
		t.Errorf("the shards' --shards is not the Job's completions (%d): %v", n, args)
	}
	if pa := jobs["pgrehearse-plan"].Spec.Template.Spec.Containers[0].Args; !slices.Contains(pa, "--shards="+itoa(n)) {
		t.Errorf("the plan's --shards is not the Job's completions (%d): %v", n, pa)
	}
	merged := 0
	for _, a := range jobs["pgrehearse-merge"].Spec.Template.Spec.Containers[0].Args {
		if strings.HasPrefix(a, "/results/shard-") {
			merged++
		}
	}
	if merged != n {
		t.Errorf("merge reads %d shard results, the Job has %d shards", merged, n)
	}
	for name, job := range jobs {
		ps := job.Spec.Template.Spec
		if ps.RestartPolicy != corev1.RestartPolicyNever {
			t.Errorf("%s: restartPolicy %q: a restarted container would replay again", name, ps.RestartPolicy)
		}
		if ps.SecurityContext == nil || ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot {
			t.Errorf("%s: not runAsNonRoot", name)
		}
		for _, c := range ps.Containers {
			for _, m := range c.VolumeMounts {
				if m.Name == "logs" && !m.ReadOnly {
					t.Errorf("%s: the log is mounted writable", name)
				}
			}
		}
		for _, v := range ps.Volumes {
			if v.Name == "results" && (v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "pgrehearse-results") {
				t.Errorf("%s: results are not on the shared claim", name)
			}
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestManifestFlagsExist(t *testing.T) {
	jobs, other := manifests(t)
	pods := map[string]corev1.PodSpec{}
	for name, job := range jobs {
		pods[name] = job.Spec.Template.Spec
	}
	for _, o := range other {
		switch o := o.(type) {
		case *appsv1.Deployment:
			pods[o.Name] = o.Spec.Template.Spec
		case *appsv1.StatefulSet:
			pods[o.Name] = o.Spec.Template.Spec
		}
	}
	for name, ps := range pods {
		for _, c := range ps.Containers {
			if !strings.HasPrefix(c.Image, "pgrehearse") {
				continue // another program (the coordination database)
			}
			if len(c.Args) == 0 {
				t.Fatalf("%s: no arguments", name)
			}
			sub := c.Args[0]
			help := helpOf(t, sub)
			for _, a := range c.Args[1:] {
				if !strings.HasPrefix(a, "--") {
					continue
				}
				flag, _, _ := strings.Cut(a, "=")
				has := regexp.MustCompile(`(?m)^\s+(-\w, )?` + regexp.QuoteMeta(flag) + `\b`).MatchString(help)
				if !has {
					t.Errorf("%s: pgrehearse %s has no flag %s", name, sub, flag)
				}
			}
		}
	}
}

func helpOf(t *testing.T, sub string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Run(context.Background(), cli.IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut}, []string{sub, "--help"})
	if code != 0 {
		t.Fatalf("pgrehearse %s --help: exit %d: %s", sub, code, errOut.String())
	}
	return out.String() + errOut.String()
}

// The capture proxy's Deployment and Service agree with its arguments:
// the Service sends the applications to the port the proxy listens on,
// the readiness probe asks the port the metrics are served on (on every
// interface, since the kubelet probes the pod's address), the capture
// directory is on the claim, and the upstream comes from a Secret.
func TestCaptureManifest(t *testing.T) {
	_, other := manifests(t)
	var (
		dep *appsv1.Deployment
		svc *corev1.Service
	)
	claims := map[string]bool{}
	secrets := map[string]*corev1.Secret{}
	for _, o := range other {
		switch o := o.(type) {
		case *appsv1.Deployment:
			if o.Name == "pgrehearse-capture" {
				dep = o
			}
		case *corev1.Service:
			if o.Name == "pgrehearse-capture" {
				svc = o
			}
		case *corev1.PersistentVolumeClaim:
			claims[o.Name] = true
		case *corev1.Secret:
			secrets[o.Name] = o
		}
	}
	if dep == nil || svc == nil {
		t.Fatalf("no Deployment and Service pgrehearse-capture (Deployment %v, Service %v)", dep != nil, svc != nil)
	}
	ps := dep.Spec.Template.Spec
	if len(ps.Containers) != 1 {
		t.Fatalf("%d containers, want the proxy alone", len(ps.Containers))
	}
	c := ps.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "capture" {
		t.Fatalf("args %q do not run pgrehearse capture", c.Args)
	}
	flags := map[string]string{}
	for _, a := range c.Args[1:] {
		name, value, ok := strings.Cut(a, "=")
		if !ok {
			t.Fatalf("argument %q: write flags as --name=value, so that this test reads them", a)
		}
		flags[name] = value
	}
	for _, f := range []string{"--listen", "--upstream", "--out", "--metrics"} {
		if flags[f] == "" {
			t.Fatalf("no %s in %q", f, c.Args)
		}
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	// resolve is the container port a probe or a Service names, by name
	// or by number (an IntOrString says either as a string).
	resolve := func(p fmt.Stringer) int32 {
		if n, ok := ports[p.String()]; ok {
			return n
		}
		n, err := strconv.ParseInt(p.String(), 10, 32)
		if err != nil {
			t.Errorf("no container port named %q", p)
		}
		return int32(n)
	}
	// portOf is the port an address flag binds, checked to be reachable
	// from outside the pod.
	portOf := func(flag string) int32 {
		host, port, err := net.SplitHostPort(promsink.ListenAddr(flags[flag]))
		if err != nil {
			t.Fatalf("%s=%s: %v", flag, flags[flag], err)
		}
		if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
			t.Errorf("%s=%s listens on loopback only: neither the kubelet nor a Service reaches it", flag, flags[flag])
		}
		n, err := strconv.ParseInt(port, 10, 32)
		if err != nil {
			t.Fatalf("%s=%s: %v", flag, flags[flag], err)
		}
		return int32(n)
	}
	listen, metrics := portOf("--listen"), portOf("--metrics")

	probe := c.ReadinessProbe
	if probe == nil || probe.HTTPGet == nil {
		t.Fatal("no readinessProbe httpGet")
	}
	if probe.HTTPGet.Path != "/ready" {
		t.Errorf("readiness probe asks %s, want /ready", probe.HTTPGet.Path)
	}
	if p := resolve(&probe.HTTPGet.Port); p != metrics {
		t.Errorf("readiness probe asks port %d, --metrics serves %d", p, metrics)
	}

	selects := len(svc.Spec.Selector) > 0
	for k, v := range svc.Spec.Selector {
		selects = selects && dep.Spec.Template.Labels[k] == v
	}
	if !selects {
		t.Errorf("the Service's selector %v does not select the proxy's pods %v", svc.Spec.Selector, dep.Spec.Template.Labels)
	}
	var pg *corev1.ServicePort
	for i, p := range svc.Spec.Ports {
		if p.Name == "postgres" {
			pg = &svc.Spec.Ports[i]
		}
	}
	if pg == nil {
		t.Fatal("the Service has no port named postgres")
	}
	if p := resolve(&pg.TargetPort); p != listen {
		t.Errorf("the Service targets port %d, the proxy listens on %d", p, listen)
	}

	out := flags["--out"]
	parent := path.Dir(out)
	var mount *corev1.VolumeMount
	for i, m := range c.VolumeMounts {
		if path.Clean(m.MountPath) == parent {
			mount = &c.VolumeMounts[i]
		}
	}
	if mount == nil {
		t.Fatalf("--out=%s: no volume mounted at %s", out, parent)
	}
	if mount.ReadOnly {
		t.Errorf("the capture volume is mounted read-only")
	}
	for _, v := range ps.Volumes {
		if v.Name == mount.Name && (v.PersistentVolumeClaim == nil || !claims[v.PersistentVolumeClaim.ClaimName]) {
			t.Errorf("volume %s is not a claim of the manifests: the capture would not outlive the pod", v.Name)
		}
	}

	// $(VAR) in the arguments expands from the container's environment:
	// the upstream must come from a Secret the manifests hold, with that
	// key.
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	m := regexp.MustCompile(`^\$\((\w+)\)$`).FindStringSubmatch(flags["--upstream"])
	if m == nil {
		t.Fatalf("--upstream=%s: want $(VAR) from a Secret", flags["--upstream"])
	}
	ref := env[m[1]].ValueFrom
	if ref == nil || ref.SecretKeyRef == nil {
		t.Fatalf("%s is not from a Secret", m[1])
	}
	if s := secrets[ref.SecretKeyRef.Name]; s == nil || s.StringData[ref.SecretKeyRef.Key] == "" {
		t.Errorf("no Secret %s with key %s", ref.SecretKeyRef.Name, ref.SecretKeyRef.Key)
	}
	for _, v := range regexp.MustCompile(`\$\((\w+)\)`).FindAllStringSubmatch(strings.Join(c.Args, " "), -1) {
		if _, ok := env[v[1]]; !ok {
			t.Errorf("$(%s) is not in the container's environment: it would be passed as is", v[1])
		}
	}

	// SIGTERM finalizes the capture; the default 30 s grace may not be
	// enough on a slow volume.
	if g := ps.TerminationGracePeriodSeconds; g == nil || *g < 60 {
		t.Error("terminationGracePeriodSeconds under 60 (30 when unset): want 60 or more to finalize the capture")
	}
	if sc := ps.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.FSGroup == nil {
		t.Error("the pod must run as non-root with an fsGroup that may write the claim")
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 1 || dep.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Error("one replica, recreated: the claim is ReadWriteOnce")
	}
}
