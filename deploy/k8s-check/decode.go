// decode.go: each rendered document decoded strictly into the Kubernetes API's own Go type
// (k8s.io/api, and prometheus-operator's for ServiceMonitor): an unknown, misspelt,
// wrongly-cased or duplicated field fails, and so does a kind not listed here.

package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// object is one decoded document.
type object struct {
	kind, name, namespace string
	source                string // the template it came from (`# Source:`), for messages
	obj                   any    // a pointer to the typed object
}

func (o object) String() string {
	return fmt.Sprintf("%s %s/%s (%s)", o.kind, o.namespace, o.name, o.source)
}

// kinds maps apiVersion/kind to a new typed object: the only kinds the chart may render.
var kinds = map[string]func() any{
	"v1/Namespace":                            func() any { return &corev1.Namespace{} },
	"v1/ConfigMap":                            func() any { return &corev1.ConfigMap{} },
	"v1/Service":                              func() any { return &corev1.Service{} },
	"v1/ServiceAccount":                       func() any { return &corev1.ServiceAccount{} },
	"apps/v1/StatefulSet":                     func() any { return &appsv1.StatefulSet{} },
	"apps/v1/Deployment":                      func() any { return &appsv1.Deployment{} },
	"apps/v1/DaemonSet":                       func() any { return &appsv1.DaemonSet{} },
	"autoscaling/v2/HorizontalPodAutoscaler":  func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"policy/v1/PodDisruptionBudget":           func() any { return &policyv1.PodDisruptionBudget{} },
	"networking.k8s.io/v1/NetworkPolicy":      func() any { return &networkingv1.NetworkPolicy{} },
	"monitoring.coreos.com/v1/ServiceMonitor": func() any { return &monitoringv1.ServiceMonitor{} },
}

var sourceLine = regexp.MustCompile(`(?m)^# Source: (.+)$`)

// splitDocuments splits a multi-document YAML stream at its `---` lines.
func splitDocuments(manifest string) []string {
	var docs []string
	var cur strings.Builder
	flush := func() {
		if strings.TrimSpace(cur.String()) != "" {
			docs = append(docs, cur.String())
		}
		cur.Reset()
	}
	for _, line := range strings.SplitAfter(manifest, "\n") {
		if strings.TrimRight(line, " \r\n") == "---" {
			flush()
			continue
		}
		cur.WriteString(line)
	}
	flush()
	return docs
}

// decodeAll decodes every document; it returns all the errors it finds, not just the first.
func decodeAll(manifest string) ([]object, []string) {
	var objs []object
	var errs []string
	seen := map[string]bool{}
	for i, doc := range splitDocuments(manifest) {
		src := fmt.Sprintf("document %d", i+1)
		if m := sourceLine.FindStringSubmatch(doc); m != nil {
			src = m[1]
		}
		o, err := decodeOne(doc)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", src, err))
			continue
		}
		if o == nil { // only comments
			continue
		}
		o.source = src
		key := o.kind + " " + o.namespace + "/" + o.name
		if seen[key] {
			errs = append(errs, fmt.Sprintf("%s: %s rendered twice", src, key))
		}
		seen[key] = true
		objs = append(objs, *o)
	}
	return objs, errs
}

func decodeOne(doc string) (*object, error) {
	// YAML to JSON, refusing duplicate keys, then JSON into the type: case-sensitive, unknown
	// and duplicate fields reported (what the API server's strict field validation does).
	js, err := yaml.YAMLToJSONStrict([]byte(doc))
	if err != nil {
		return nil, fmt.Errorf("YAML: %w", err)
	}
	if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		return nil, nil
	}
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(js, &meta); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	gvk := meta.APIVersion + "/" + meta.Kind
	mk, ok := kinds[gvk]
	if !ok {
		return nil, fmt.Errorf("unknown kind %s (known: the chart's kinds only)", gvk)
	}
	obj := mk()
	strictErrs, err := kjson.UnmarshalStrict(js, obj)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", gvk, meta.Metadata.Name, err)
	}
	if len(strictErrs) > 0 {
		var s []string
		for _, e := range strictErrs {
			s = append(s, e.Error())
		}
		return nil, fmt.Errorf("%s %s: strict decoding: %s", gvk, meta.Metadata.Name, strings.Join(s, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(meta.Metadata.Name); len(errs) > 0 {
		return nil, fmt.Errorf("%s name %q: %s", gvk, meta.Metadata.Name, strings.Join(errs, "; "))
	}
	if meta.Kind != "Namespace" && meta.Metadata.Namespace == "" {
		return nil, fmt.Errorf("%s %s: no metadata.namespace", gvk, meta.Metadata.Name)
	}
	return &object{kind: meta.Kind, name: meta.Metadata.Name, namespace: meta.Metadata.Namespace, obj: obj}, nil
}
