// policy.go: what the API types cannot say: every container locked down and sized, the
// gateway's probes, shutdown timing and memory against its effective config, per-gateway
// ingest names, and the collectors' gateway list covering every gateway the HPA may make.

package main

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

const componentLabel = "app.kubernetes.io/component"

// workload is a StatefulSet, Deployment or DaemonSet, reduced to what the checks need.
type workload struct {
	object
	pod         *corev1.PodSpec
	labels      map[string]string // the pod template's
	selector    *metav1.LabelSelector
	replicas    int32
	serviceName string          // StatefulSet only
	claims      map[string]bool // StatefulSet volumeClaimTemplates: a PVC per pod, outliving it
	configs     map[string]effective
	bounds      map[string]bounds // the gateway's worst case, by container
}

func (w workload) component() string { return w.labels[componentLabel] }

// podName is the name of the workload's first pod (a StatefulSet's is <name>-0).
func (w workload) podName() string { return w.name + "-0" }

// checker gathers the rendered objects and the problems found in them.
type checker struct {
	objs       []object
	binDir     string
	monitoring string
	workloads  []*workload
	configMaps map[string]*corev1.ConfigMap
	services   map[string]*corev1.Service
	problems   []string
	// feederParsedOnly: no entropy-feeder in binDir; its config was parsed, not validated.
	feederParsedOnly bool
}

func (c *checker) fail(o object, format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf("%s: %s", o, fmt.Sprintf(format, args...)))
}

func newChecker(objs []object, binDir, monitoring string) *checker {
	c := &checker{objs: objs, binDir: binDir, monitoring: monitoring,
		configMaps: map[string]*corev1.ConfigMap{}, services: map[string]*corev1.Service{}}
	for _, o := range objs {
		switch v := o.obj.(type) {
		case *corev1.ConfigMap:
			c.configMaps[o.namespace+"/"+o.name] = v
		case *corev1.Service:
			c.services[o.namespace+"/"+o.name] = v
		case *appsv1.StatefulSet:
			claims := map[string]bool{}
			for _, t := range v.Spec.VolumeClaimTemplates {
				claims[t.Name] = true
			}
			c.workloads = append(c.workloads, &workload{object: o, pod: &v.Spec.Template.Spec,
				labels: v.Spec.Template.Labels, selector: v.Spec.Selector,
				replicas: replicas(v.Spec.Replicas), serviceName: v.Spec.ServiceName, claims: claims})
		case *appsv1.Deployment:
			c.workloads = append(c.workloads, &workload{object: o, pod: &v.Spec.Template.Spec,
				labels: v.Spec.Template.Labels, selector: v.Spec.Selector,
				replicas: replicas(v.Spec.Replicas)})
		case *appsv1.DaemonSet:
			c.workloads = append(c.workloads, &workload{object: o, pod: &v.Spec.Template.Spec,
				labels: v.Spec.Template.Labels, selector: v.Spec.Selector})
		}
	}
	return c
}

func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

// run does every check; the problems are in c.problems.
func (c *checker) run() {
	for _, w := range c.workloads {
		c.checkPod(w)
		c.checkConfigs(w)
		switch w.component() {
		case "gateway":
			c.checkGateway(w)
		case "collector":
			c.checkCollector(w)
		case "feeder":
			c.checkFeeder(w)
		}
	}
	c.checkNetworkPolicies()
}

// checkPod: non-root, read-only root, no privilege escalation, capabilities dropped, seccomp,
// no service account token, no host namespaces, requests and limits on every container,
// secrets only as files.
func (c *checker) checkPod(w *workload) {
	p := w.pod
	if sel, err := metav1.LabelSelectorAsSelector(w.selector); err != nil || sel.Empty() || !sel.Matches(labels.Set(w.labels)) {
		c.fail(w.object, "selector does not select its own pod template")
	}
	if p.AutomountServiceAccountToken == nil || *p.AutomountServiceAccountToken {
		c.fail(w.object, "automountServiceAccountToken must be false")
	}
	if p.HostNetwork || p.HostPID || p.HostIPC {
		c.fail(w.object, "host namespaces are not allowed")
	}
	// No node directories, but the feeder's EGD socket directory.
	for _, v := range p.Volumes {
		if v.HostPath != nil && !c.egdVolume(w, v) {
			c.fail(w.object, "hostPath volume %s (%s): only the feeder's EGD directory may come from the node", v.Name, v.HostPath.Path)
		}
	}
	psc := p.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	all := append(append([]corev1.Container{}, p.InitContainers...), p.Containers...)
	for _, ct := range all {
		sc := ct.SecurityContext
		if sc == nil {
			sc = &corev1.SecurityContext{}
		}
		name := "container " + ct.Name
		// The feeder alone runs as uid 0, holding CAP_SYS_ADMIN and nothing else (feeder.go).
		if w.component() == "feeder" {
			c.checkFeederContainer(w, name, sc, psc)
		} else {
			c.checkNonRoot(w, name, sc, psc)
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			c.fail(w.object, "%s: readOnlyRootFilesystem must be true", name)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			c.fail(w.object, "%s: allowPrivilegeEscalation must be false", name)
		}
		if sc.Privileged != nil && *sc.Privileged {
			c.fail(w.object, "%s: privileged", name)
		}
		seccomp := sc.SeccompProfile
		if seccomp == nil {
			seccomp = psc.SeccompProfile
		}
		if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
			c.fail(w.object, "%s: seccompProfile must be RuntimeDefault", name)
		}
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := ct.Resources.Requests[res]; !ok {
				c.fail(w.object, "%s: no %s request", name, res)
			}
			if _, ok := ct.Resources.Limits[res]; !ok {
				c.fail(w.object, "%s: no %s limit", name, res)
			}
		}
		for _, e := range ct.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				c.fail(w.object, "%s: secret %s in an environment variable; mount it as a file", name, e.Name)
			}
		}
		for _, m := range ct.VolumeMounts {
			// Writable only for state kept per pod (the gateway's ingest lease) and the
			// feeder's EGD socket directory on the node.
			if !m.ReadOnly && !w.claims[m.Name] && !c.egdMount(w, m) {
				c.fail(w.object, "%s: volume %s mounted writable (only a volumeClaimTemplate may be)", name, m.Name)
			}
		}
	}
}

// checkNonRoot: every container but the feeder's runs as a non-root uid with no capability.
func (c *checker) checkNonRoot(w *workload, name string, sc *corev1.SecurityContext, psc *corev1.PodSecurityContext) {
	nonRoot := sc.RunAsNonRoot
	if nonRoot == nil {
		nonRoot = psc.RunAsNonRoot
	}
	if nonRoot == nil || !*nonRoot {
		c.fail(w.object, "%s: runAsNonRoot must be true", name)
	}
	uid := sc.RunAsUser
	if uid == nil {
		uid = psc.RunAsUser
	}
	if uid == nil || *uid == 0 {
		c.fail(w.object, "%s: runAsUser must be set and not 0 (the images run as 10001)", name)
	}
	if sc.Capabilities == nil || !hasCap(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
		c.fail(w.object, "%s: capabilities must drop ALL and add none", name)
	}
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

func hasCap(caps []corev1.Capability, want corev1.Capability) bool {
	for _, c := range caps {
		if strings.EqualFold(string(c), string(want)) {
			return true
		}
	}
	return false
}

// checkConfigs runs each gateway and collector container's rendered config through its
// binary, as its first pod would.
func (c *checker) checkConfigs(w *workload) {
	binary := map[string]string{"gateway": "entropy-gateway", "collector": "entropy-collector", "feeder": "entropy-feeder"}[w.component()]
	w.configs = map[string]effective{}
	w.bounds = map[string]bounds{}
	for i := range w.pod.Containers {
		ct := &w.pod.Containers[i]
		path, text, err := podConfig(w.pod, ct, w.namespace, c.configMaps)
		if err != nil {
			c.fail(w.object, "container %s: %v", ct.Name, err)
			continue
		}
		if path == "" {
			if binary != "" {
				c.fail(w.object, "container %s: no --config file", ct.Name)
			}
			continue
		}
		if binary == "" {
			c.fail(w.object, "container %s: --config given, but component %q has no binary to check it", ct.Name, w.component())
			continue
		}
		// The feeder may not be built where this runs (it is newer than the check): its config
		// is then read as TOML for the policy, without the binary's validation.
		if binary == "entropy-feeder" && !isExecutable(filepath.Join(c.binDir, binary)) {
			var eff effective
			if _, err := toml.Decode(text, &eff); err != nil {
				c.fail(w.object, "container %s: --config %s is not TOML: %v", ct.Name, path, err)
				continue
			}
			w.configs[ct.Name] = eff
			c.feederParsedOnly = true
			continue
		}
		env, err := podEnv(ct, w.podName())
		if err != nil {
			c.fail(w.object, "container %s: %v", ct.Name, err)
			continue
		}
		eff, err := printConfig(c.binDir, binary, text, env)
		if err != nil {
			c.fail(w.object, "container %s: %v", ct.Name, err)
			// The feeder's policy still reads what the ConfigMap says, so that a key in it is
			// reported as such whatever else the binary refused (an unknown `api_key` is both).
			var raw effective
			if _, terr := toml.Decode(text, &raw); binary == "entropy-feeder" && terr == nil {
				w.configs[ct.Name] = raw
			}
			continue
		}
		w.configs[ct.Name] = eff
		if binary == "entropy-gateway" {
			b, err := printBounds(c.binDir, text, env)
			if err != nil {
				c.fail(w.object, "container %s: %v", ct.Name, err)
				continue
			}
			w.bounds[ct.Name] = b
		}
	}
}

// containerPort resolves a probe's port (a number or a container port's name).
func containerPort(ct *corev1.Container, port string) int32 {
	if n, err := strconv.Atoi(port); err == nil {
		return int32(n)
	}
	for _, p := range ct.Ports {
		if p.Name == port {
			return p.ContainerPort
		}
	}
	return 0
}

// checkReadiness: GET /readyz on the metrics port 9464.
func (c *checker) checkReadiness(w *workload, ct *corev1.Container) {
	r := ct.ReadinessProbe
	if r == nil || r.HTTPGet == nil || r.HTTPGet.Path != "/readyz" || containerPort(ct, r.HTTPGet.Port.String()) != 9464 {
		c.fail(w.object, "container %s: readiness probe must be GET /readyz on port 9464", ct.Name)
	}
}

func ceilSeconds(ms int64) int64 { return (ms + 999) / 1000 }

func (c *checker) checkGateway(w *workload) {
	if w.kind != "StatefulSet" {
		c.fail(w.object, "gateways must be a StatefulSet (stable gateway_id and ingest name per pod)")
	}
	for i := range w.pod.Containers {
		ct := &w.pod.Containers[i]
		c.checkReadiness(w, ct)
		eff, ok := w.configs[ct.Name]
		if !ok {
			continue
		}
		var preStop int64
		if ct.Lifecycle == nil || ct.Lifecycle.PreStop == nil || ct.Lifecycle.PreStop.Sleep == nil {
			c.fail(w.object, "container %s: needs a lifecycle.preStop.sleep (endpoint propagation before SIGTERM)", ct.Name)
		} else {
			preStop = ct.Lifecycle.PreStop.Sleep.Seconds
		}
		drain, err1 := eff.intKey("shutdown_drain_ms")
		grace, err2 := eff.intKey("shutdown_grace_ms")
		if err1 != nil || err2 != nil {
			c.fail(w.object, "container %s: %v %v", ct.Name, err1, err2)
		} else {
			need := preStop + ceilSeconds(drain+grace)
			got := int64(30)
			if w.pod.TerminationGracePeriodSeconds != nil {
				got = *w.pod.TerminationGracePeriodSeconds
			}
			if got < need {
				c.fail(w.object, "terminationGracePeriodSeconds %d < preStop %d s + shutdown_drain_ms %d + shutdown_grace_ms %d (%d s)", got, preStop, drain, grace, need)
			}
		}
		// The worst case of its config (--print-bounds) within the memory request and limit,
		// with as many runtime workers as its CPU limit allows (the machine's without one):
		// past the limit the kernel would kill it under load instead of the gateway shedding it.
		if b, ok := w.bounds[ct.Name]; ok {
			lim, req := ct.Resources.Limits[corev1.ResourceMemory], ct.Resources.Requests[corev1.ResourceMemory]
			cpus := b.Workers
			if cpu, ok := ct.Resources.Limits[corev1.ResourceCPU]; ok {
				cpus = (cpu.MilliValue() + 999) / 1000
			}
			if worst := b.on(cpus); lim.Value() < worst || req.Value() < worst {
				c.fail(w.object, "container %s: memory request/limit %s/%s below the worst case of its config, %d MiB on %d CPU(s) (entropy-gateway --print-bounds)", ct.Name, req.String(), lim.String(), worst>>20, cpus)
			}
		}
		// The ingest lease must outlive the pod: a PVC of its own, writable, at state_dir.
		state, _ := eff["state_dir"].(string)
		onClaim := false
		for _, m := range ct.VolumeMounts {
			if w.claims[m.Name] && !m.ReadOnly && filepath.Clean(m.MountPath) == filepath.Clean(state) {
				onClaim = true
			}
		}
		if !onClaim {
			c.fail(w.object, "container %s: state_dir %q is not a writable volumeClaimTemplate mount (a deleted pod would lose its ingest lease)", ct.Name, state)
		}
		if id, _ := eff["gateway_id"].(string); id != w.podName() {
			c.fail(w.object, "container %s: gateway_id %q is not the pod name %q", ct.Name, id, w.podName())
		}
		for key, port := range map[string]int32{"listen_addr": 50051, "ingest_listen_addr": 50052, "metrics_listen_addr": 9464} {
			addr, _ := eff[key].(string)
			if _, p, err := net.SplitHostPort(addr); err != nil || p != strconv.Itoa(int(port)) {
				c.fail(w.object, "container %s: %s = %q, expected port %d", ct.Name, key, addr, port)
			}
		}
	}
	svc := c.services[w.namespace+"/"+w.serviceName]
	if svc == nil || svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses || !servicePort(svc, 50052) {
		c.fail(w.object, "serviceName %q must be a rendered headless Service with port 50052 and publishNotReadyAddresses (collectors fill a gateway's pool before it is ready)", w.serviceName)
	} else if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(w.labels)) {
		c.fail(w.object, "Service %s does not select the gateway pods", svc.Name)
	}
	if !c.hasPDB(w) {
		c.fail(w.object, "no PodDisruptionBudget selects the gateways")
	}
}

func servicePort(s *corev1.Service, port int32) bool {
	for _, p := range s.Spec.Ports {
		if p.Port == port {
			return true
		}
	}
	return false
}

func (c *checker) hasPDB(w *workload) bool {
	for _, o := range c.objs {
		if pdb, ok := o.obj.(*policyv1.PodDisruptionBudget); ok && o.namespace == w.namespace {
			if sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err == nil && !sel.Empty() && sel.Matches(labels.Set(w.labels)) {
				return true
			}
		}
	}
	return false
}

// maxGateways is how many pods a gateway StatefulSet may have: its replicas, or the
// maxReplicas of an HPA scaling it.
func (c *checker) maxGateways(w *workload) int32 {
	n := w.replicas
	for _, o := range c.objs {
		if h, ok := o.obj.(*autoscalingv2.HorizontalPodAutoscaler); ok && o.namespace == w.namespace &&
			h.Spec.ScaleTargetRef.Kind == w.kind && h.Spec.ScaleTargetRef.Name == w.name && h.Spec.MaxReplicas > n {
			n = h.Spec.MaxReplicas
		}
	}
	return n
}

func (c *checker) checkCollector(w *workload) {
	for i := range w.pod.Containers {
		ct := &w.pod.Containers[i]
		c.checkReadiness(w, ct)
		eff, ok := w.configs[ct.Name]
		if !ok {
			continue
		}
		if grace, err := eff.intKey("shutdown_grace_ms"); err != nil {
			c.fail(w.object, "container %s: %v", ct.Name, err)
		} else if w.pod.TerminationGracePeriodSeconds == nil || *w.pod.TerminationGracePeriodSeconds < ceilSeconds(grace) {
			c.fail(w.object, "terminationGracePeriodSeconds below shutdown_grace_ms %d", grace)
		}
		listed := map[string]string{}
		for _, g := range eff.tables("gateway") {
			id, _ := g["id"].(string)
			ep, _ := g["endpoint"].(string)
			listed[id] = ep
		}
		for _, gw := range c.workloads {
			if gw.component() != "gateway" {
				continue
			}
			if gw.namespace == w.namespace {
				c.fail(w.object, "collectors share namespace %s with the gateways", w.namespace)
			}
			for i := int32(0); i < c.maxGateways(gw); i++ {
				id := fmt.Sprintf("%s-%d", gw.name, i)
				ep, ok := listed[id]
				if !ok {
					c.fail(w.object, "container %s: no [[gateway]] for %s (replicas or HPA maxReplicas)", ct.Name, id)
					continue
				}
				u, err := url.Parse(ep)
				want := id + "." + gw.serviceName + "." + gw.namespace + ".svc"
				if err != nil || u.Scheme != "https" || u.Port() != "50052" || (u.Hostname() != want && !strings.HasPrefix(u.Hostname(), want+".")) {
					c.fail(w.object, "container %s: gateway %s endpoint %q, expected https://%s[.<cluster domain>]:50052", ct.Name, id, ep, want)
				}
			}
		}
	}
}
