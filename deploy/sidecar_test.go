package deploy

import (
	"fmt"
	"net"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/pgrehearse/pgrehearse/internal/promsink"
)

// TestCaptureSidecar holds capture-sidecar.yaml to what makes the proxy a
// safe sidecar of the database's pod: it relays to the server beside it
// in plaintext over localhost; it shows the clients the server's own
// certificate and key (files of the same Secret the server's ssl_cert_file
// and ssl_key_file name); the Service's postgres port reaches the proxy,
// not the server; its readiness probe asks the port --metrics serves;
// --out is on a claim of the pod, mounted writable; and since every
// client then reaches the server from localhost, the server's pg_hba.conf
// trusts no host connection.
func TestCaptureSidecar(t *testing.T) {
	_, other := manifests(t)
	var (
		set *appsv1.StatefulSet
		svc *corev1.Service
	)
	configMaps := map[string]*corev1.ConfigMap{}
	for _, o := range other {
		switch o := o.(type) {
		case *appsv1.StatefulSet:
			for _, c := range o.Spec.Template.Spec.Containers {
				if len(c.Args) > 0 && c.Args[0] == "capture" {
					set = o
				}
			}
		case *corev1.ConfigMap:
			configMaps[o.Name] = o
		}
	}
	if set == nil {
		t.Fatal("no StatefulSet with a capture container")
	}
	for _, o := range other {
		if s, ok := o.(*corev1.Service); ok && s.Name == set.Spec.ServiceName {
			svc = s
		}
	}
	if svc == nil {
		t.Fatalf("no Service %s, the StatefulSet's serviceName", set.Spec.ServiceName)
	}
	ps := set.Spec.Template.Spec
	if len(ps.Containers) != 2 {
		t.Fatalf("%d containers, want the server and the proxy", len(ps.Containers))
	}
	var proxy, server corev1.Container
	for _, c := range ps.Containers {
		if len(c.Args) > 0 && c.Args[0] == "capture" {
			proxy = c
		} else {
			server = c
		}
	}
	flags := map[string]string{}
	for _, a := range proxy.Args[1:] {
		name, value, ok := strings.Cut(a, "=")
		if !ok {
			t.Fatalf("argument %q: write flags as --name=value, so that this test reads them", a)
		}
		flags[name] = value
	}
	// The server's settings, from its "-c name=value" arguments.
	settings := map[string]string{}
	for i := 0; i+1 < len(server.Args); i++ {
		if server.Args[i] == "-c" {
			name, value, _ := strings.Cut(server.Args[i+1], "=")
			settings[name] = value
		}
	}
	ports := func(c corev1.Container) map[string]int32 {
		m := map[string]int32{}
		for _, p := range c.Ports {
			m[p.Name] = p.ContainerPort
		}
		return m
	}
	proxyPorts, serverPorts := ports(proxy), ports(server)
	// resolve is the proxy's container port a probe or a Service names,
	// by name or by number (an IntOrString says either as a string).
	resolve := func(p fmt.Stringer) int32 {
		if n, ok := proxyPorts[p.String()]; ok {
			return n
		}
		n, err := strconv.ParseInt(p.String(), 10, 32)
		if err != nil {
			t.Errorf("no port of the proxy's named %q", p)
		}
		return int32(n)
	}
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
			t.Fatal(err)
		}
		return int32(n)
	}
	listen, metrics := portOf("--listen"), portOf("--metrics")

	// The leg to the server: localhost, plaintext, the server's port.
	up, err := pgconn.ParseConfig(flags["--upstream"])
	if err != nil {
		t.Fatalf("--upstream=%s: %v", flags["--upstream"], err)
	}
	if ip := net.ParseIP(up.Host); ip == nil || !ip.IsLoopback() {
		t.Errorf("--upstream's host %s is not the pod's loopback", up.Host)
	}
	if up.TLSConfig != nil || len(up.Fallbacks) != 0 {
		t.Errorf("--upstream=%s: want sslmode=disable, the plaintext leg beside the server", flags["--upstream"])
	}
	if n, ok := serverPorts["server"]; !ok || int32(up.Port) != n {
		t.Errorf("--upstream's port %d is not the server's container port %v", up.Port, serverPorts)
	}

	// A file the container sees at p, as volume and key: the volume
	// mounted at p's directory.
	fileOf := func(c corev1.Container, p string) (volume, name string) {
		for _, m := range c.VolumeMounts {
			if path.Clean(m.MountPath) == path.Dir(p) {
				return m.Name, path.Base(p)
			}
		}
		t.Errorf("%s: nothing mounted at %s", c.Name, path.Dir(p))
		return "", ""
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range ps.Volumes {
		volumes[v.Name] = v
	}
	secretFile := func(c corev1.Container, p string) string {
		v, name := fileOf(c, p)
		if s := volumes[v].Secret; s != nil {
			return s.SecretName + "/" + name
		}
		t.Errorf("%s: %s is not from a Secret", c.Name, p)
		return ""
	}
	if settings["ssl"] != "on" {
		t.Error("the server does not run with ssl=on")
	}
	for flag, setting := range map[string]string{"--tls-cert": "ssl_cert_file", "--tls-key": "ssl_key_file"} {
		if flags[flag] == "" || settings[setting] == "" {
			t.Fatalf("no %s on the proxy or %s on the server", flag, setting)
		}
		if p, s := secretFile(proxy, flags[flag]), secretFile(server, settings[setting]); p != s {
			t.Errorf("the proxy's %s is %s, the server's %s is %s: want the server's own", flag, p, setting, s)
		}
	}

	// The server refuses a key file of root's that its group may write or
	// others read (more than 0640); the proxy reads it through fsGroup.
	if v, _ := fileOf(server, settings["ssl_key_file"]); volumes[v].Secret != nil {
		if m := volumes[v].Secret.DefaultMode; m == nil || *m&0o037 != 0 || *m&0o040 == 0 {
			t.Errorf("the key's volume has mode %v: want 0640, which the server accepts and the proxy reads through fsGroup", m)
		}
	}

	// Every client arrives from localhost: no host rule may trust.
	hbaVolume, hbaName := fileOf(server, settings["hba_file"])
	cm := volumes[hbaVolume].ConfigMap
	if settings["hba_file"] == "" || cm == nil || configMaps[cm.Name] == nil {
		t.Fatalf("the server's hba_file %q is not from a ConfigMap of the manifests", settings["hba_file"])
	}
	hba := configMaps[cm.Name].Data[hbaName]
	rules := 0
	for _, l := range strings.Split(hba, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		rules++
		if strings.HasPrefix(f[0], "host") && slices.Contains(f, "trust") {
			t.Errorf("pg_hba.conf: %q: through the proxy every client comes from localhost, and would be trusted", l)
		}
	}
	if rules == 0 {
		t.Error("pg_hba.conf has no rule")
	}

	// The Service reaches the proxy; the readiness probe, its metrics.
	selects := len(svc.Spec.Selector) > 0
	for k, v := range svc.Spec.Selector {
		selects = selects && set.Spec.Template.Labels[k] == v
	}
	if !selects {
		t.Errorf("the Service's selector %v does not select the pod %v", svc.Spec.Selector, set.Spec.Template.Labels)
	}
	found := false
	for _, p := range svc.Spec.Ports {
		if p.Name == "postgres" {
			found = true
			if got := resolve(&p.TargetPort); got != listen {
				t.Errorf("the Service's postgres port targets %d, the proxy listens on %d", got, listen)
			}
		}
	}
	if !found {
		t.Error("the Service has no port named postgres")
	}
	if pr := proxy.ReadinessProbe; pr == nil || pr.HTTPGet == nil || pr.HTTPGet.Path != "/ready" || resolve(&pr.HTTPGet.Port) != metrics {
		t.Errorf("the proxy's readiness probe %+v does not ask /ready on the --metrics port %d", pr, metrics)
	}

	// The capture on a claim of the pod, writable.
	v, _ := fileOf(proxy, flags["--out"])
	claimed := false
	for _, tpl := range set.Spec.VolumeClaimTemplates {
		claimed = claimed || tpl.Name == v
	}
	if !claimed {
		t.Errorf("--out=%s is on volume %q, not a claim of the StatefulSet: the capture would not outlive the pod", flags["--out"], v)
	}
	for _, m := range proxy.VolumeMounts {
		if m.Name == v && m.ReadOnly {
			t.Error("the capture volume is mounted read-only")
		}
	}
	env := map[string]bool{}
	for _, e := range proxy.Env {
		env[e.Name] = true
	}
	for _, m := range regexp.MustCompile(`\$\((\w+)\)`).FindAllStringSubmatch(strings.Join(proxy.Args, " "), -1) {
		if !env[m[1]] {
			t.Errorf("$(%s) is not in the proxy's environment: it would be passed as is", m[1])
		}
	}
	if g := ps.TerminationGracePeriodSeconds; g == nil || *g < 60 {
		t.Error("terminationGracePeriodSeconds under 60: want 60 or more to finalize the capture")
	}
	if sc := ps.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.FSGroup == nil {
		t.Error("the pod must run as non-root with an fsGroup that may write the claims and read the key")
	}
}
