// Package charts holds the tests of the Helm charts beside it: nodeplan (the controller, and
// plan watch in shadow mode) and nodeplan-crd (the CRDs). They render the charts with Helm's
// own library, as `helm template` does, check every value's effect and the values schema, and
// compare the chart's objects with the kustomize base's (deploy/kustomize).
//
// The package is a module of its own (github.com/nodeplan/nodeplan/deploy) so that Helm and
// kustomize stay out of the SDK's and the programs' builds.
package charts
