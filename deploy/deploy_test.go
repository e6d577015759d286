package deploy

import (
	"bytes"
	"context"
	"os"
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
	jobs, _ := manifests(t)
	for name, job := range jobs {
		for _, c := range job.Spec.Template.Spec.Containers {
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
