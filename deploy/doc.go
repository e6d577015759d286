// Package deploy holds what runs pgrehearse elsewhere than on one machine:
// Kubernetes manifests (kubernetes/) of a sharded rehearsal (an Indexed
// Job and its coordination database) and of the capture proxy in front of
// a database (capture.yaml: a Service and a Deployment with its readiness
// probe; capture-sidecar.yaml: the proxy in the database's own pod), and
// Grafana dashboards of a replay's and of the capture proxy's live
// metrics (grafana/).
// It has no code; its tests hold the manifests to the Kubernetes API types
// and to the binary's flags, and the dashboard to the metrics the binary
// exposes, so that neither drifts from the code.
package deploy
