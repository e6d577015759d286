// Package deploy holds what runs pgrehearse elsewhere than on one machine:
// Kubernetes manifests of a sharded rehearsal (kubernetes/) and a Grafana
// dashboard of its live metrics (grafana/). It has no code; its tests hold
// the manifests to the Kubernetes API types and to the binary's flags, and
// the dashboard to the metrics the binary exposes, so that neither drifts
// from the code.
package deploy
