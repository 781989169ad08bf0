// feeder.go: the host feeder's DaemonSet (feeder.enabled). The one workload allowed uid 0 and
// a capability, so held to exactly that: CAP_SYS_ADMIN added (spelled SYS_ADMIN), ALL dropped,
// no other privilege; its API key a mounted Secret file, never in the ConfigMap; /dev/random the
// container's own; a node directory only for the EGD socket; NetworkPolicies that let it reach
// the gateway's public port and DNS, nothing else.

package main

import (
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// The EGD socket's directory in the feeder's container (the chart mounts the node's there).
const egdDir = "/run/entropy-feeder"

// checkFeederContainer replaces the non-root check for the feeder: uid 0 set explicitly, with
// capabilities drop ALL and add exactly SYS_ADMIN. Kubernetes sets no ambient capabilities, so
// a non-root process would lose an added capability at exec: non-root here is a feeder that
// cannot feed, not a safer one.
func (c *checker) checkFeederContainer(w *workload, name string, sc *corev1.SecurityContext, psc *corev1.PodSecurityContext) {
	uid := sc.RunAsUser
	if uid == nil {
		uid = psc.RunAsUser
	}
	if uid == nil || *uid != 0 {
		c.fail(w.object, "%s: runAsUser must be 0: a non-root uid loses the added CAP_SYS_ADMIN at exec (Kubernetes sets no ambient capabilities)", name)
	}
	caps := sc.Capabilities
	if caps == nil || !hasCap(caps.Drop, "ALL") {
		c.fail(w.object, "%s: capabilities must drop ALL", name)
	}
	if caps == nil || len(caps.Add) != 1 || caps.Add[0] != "SYS_ADMIN" {
		var add []corev1.Capability
		if caps != nil {
			add = caps.Add
		}
		c.fail(w.object, "%s: capabilities.add must be exactly [SYS_ADMIN] (RNDADDENTROPY's check; spelled without CAP_, which the API refuses with allowPrivilegeEscalation false), not %v", name, add)
	}
}

// egdVolume: v is the feeder's EGD directory on the node (a directory under /run).
func (c *checker) egdVolume(w *workload, v corev1.Volume) bool {
	if w.component() != "feeder" || v.HostPath == nil || v.HostPath.Type == nil {
		return false
	}
	t := *v.HostPath.Type
	p := filepath.Clean(v.HostPath.Path)
	return (t == corev1.HostPathDirectoryOrCreate || t == corev1.HostPathDirectory) &&
		(strings.HasPrefix(p, "/run/") || strings.HasPrefix(p, "/var/run/"))
}

// egdMount: m mounts the feeder's EGD directory at egdDir.
func (c *checker) egdMount(w *workload, m corev1.VolumeMount) bool {
	for _, v := range w.pod.Volumes {
		if v.Name == m.Name && c.egdVolume(w, v) && filepath.Clean(m.MountPath) == egdDir {
			return true
		}
	}
	return false
}

// secretFile: path is a file of a mounted Secret volume of container ct.
func secretFile(p *corev1.PodSpec, ct *corev1.Container, path string) bool {
	for _, m := range ct.VolumeMounts {
		rel, err := filepath.Rel(m.MountPath, path)
		if err != nil || strings.HasPrefix(rel, "..") || rel == "." {
			continue
		}
		for _, v := range p.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			if len(v.Secret.Items) == 0 {
				return true
			}
			for _, it := range v.Secret.Items {
				if it.Path == rel {
					return true
				}
			}
		}
	}
	return false
}

// secretKey: config keys that would hold a secret itself rather than a file's path.
var secretKey = regexp.MustCompile(`(^|_)(key|secret|token|password)$`)

func (c *checker) checkFeeder(w *workload) {
	if w.kind != "DaemonSet" {
		c.fail(w.object, "the feeder must be a DaemonSet (one per node: each kernel is fed by its own)")
	}
	for i := range w.pod.Containers {
		ct := &w.pod.Containers[i]
		r := ct.ReadinessProbe
		if r == nil || r.HTTPGet == nil || r.HTTPGet.Path != "/readyz" || containerPort(ct, r.HTTPGet.Port.String()) != 9466 {
			c.fail(w.object, "container %s: readiness probe must be GET /readyz on port 9466", ct.Name)
		}
		for _, e := range ct.Env {
			if e.Name == "ENTROPY_API_KEY" {
				c.fail(w.object, "container %s: ENTROPY_API_KEY in the environment; mount the key from a Secret (api_key_file)", ct.Name)
			}
		}
		for _, m := range ct.VolumeMounts {
			if mp := filepath.Clean(m.MountPath); mp == "/dev" || strings.HasPrefix(mp, "/dev/") {
				c.fail(w.object, "container %s: volume %s mounted at %s; the container's own /dev/random is the kernel's", ct.Name, m.Name, m.MountPath)
			}
		}
		eff, ok := w.configs[ct.Name]
		if !ok {
			continue
		}
		for k, v := range eff {
			if k == "api_key_file" {
				continue
			}
			if secretKey.MatchString(k) {
				c.fail(w.object, "container %s: config key %s = %v: the API key belongs in a Secret (api_key_file), never in the ConfigMap", ct.Name, k, v)
			}
		}
		if path, _ := eff["api_key_file"].(string); path == "" || !secretFile(w.pod, ct, path) {
			c.fail(w.object, "container %s: api_key_file %q is not a file of a mounted Secret", ct.Name, path)
		}
		if ep, _ := eff["gateway_endpoint"].(string); !strings.HasPrefix(ep, "https://") {
			c.fail(w.object, "container %s: gateway_endpoint %q is not https://", ct.Name, ep)
		}
		if dev, ok := eff["random_device"].(string); ok && dev != "/dev/random" {
			c.fail(w.object, "container %s: random_device %q, expected /dev/random", ct.Name, dev)
		}
		if addr, _ := eff["metrics_listen_addr"].(string); addr != "" {
			if _, p, err := net.SplitHostPort(addr); err != nil || p != strconv.Itoa(9466) {
				c.fail(w.object, "container %s: metrics_listen_addr = %q, expected port 9466 (probes and NetworkPolicy)", ct.Name, addr)
			}
		}
		if sock, _ := eff["egd_socket"].(string); sock != "" {
			writable := false
			for _, m := range ct.VolumeMounts {
				writable = writable || (!m.ReadOnly && c.egdMount(w, m) && filepath.Dir(filepath.Clean(sock)) == egdDir)
			}
			if !writable {
				c.fail(w.object, "container %s: egd_socket %q is not in the EGD directory mounted from the node at %s", ct.Name, sock, egdDir)
			}
		}
	}
}

// checkFeederPolicies: the feeder's namespace denies by default; feeders get ingress only to
// metrics from the monitoring namespace, egress only to the gateways' public port (their pods,
// or CIDRs for a gateway elsewhere) and DNS; a gateway policy that restricts its public port
// lets the feeders in.
func (c *checker) checkFeederPolicies() {
	gateways := c.byComponent("gateway")
	for _, fd := range c.byComponent("feeder") {
		c.checkDefaultDeny(fd)
		var in, out, toGateway, inCluster bool
		for _, p := range c.policies() {
			if !p.selects(fd) {
				continue
			}
			in = in || p.hasType(networkingv1.PolicyTypeIngress)
			out = out || p.hasType(networkingv1.PolicyTypeEgress)
			for _, r := range p.np.Spec.Ingress {
				ok := portsAre(r.Ports, "TCP/9466") && len(r.From) > 0
				for _, f := range r.From {
					ok = ok && onlyNamespace(f, c.monitoring) && f.IPBlock == nil
				}
				if !ok {
					c.fail(p.object, "feeder ingress rule (%s) allows more than port 9466 from namespace %s", describe(r.Ports, r.From), c.monitoring)
				}
			}
			for _, r := range p.np.Spec.Egress {
				switch kind := feederEgress(r, gateways); kind {
				case "gateway":
					toGateway, inCluster = true, true
				case "cidr":
					toGateway = true
				case "dns":
				default:
					c.fail(p.object, "feeder egress rule (%s) allows more than the gateways' public port or DNS", describe(r.Ports, r.To))
				}
			}
		}
		if !in || !out {
			c.fail(fd.object, "feeder pods are not isolated for ingress and egress by a NetworkPolicy")
		}
		if !toGateway {
			c.fail(fd.object, "no feeder egress rule reaches a gateway")
		}
		if !inCluster {
			continue
		}
		for _, gw := range gateways {
			for _, p := range c.policies() {
				if !p.selects(gw) {
					continue
				}
				for _, r := range p.np.Spec.Ingress {
					if !portsAre(r.Ports, "TCP/50051") || len(r.From) == 0 {
						continue
					}
					admitted := false
					for _, f := range r.From {
						admitted = admitted || (onlyNamespace(f, fd.namespace) && podsOf(f, fd))
					}
					if !admitted {
						c.fail(p.object, "gateway public port restricted (publicFrom) without the feeder pods of namespace %s", fd.namespace)
					}
				}
			}
		}
	}
}

// feederEgress classifies an egress rule of a feeder: "gateway" (TCP 50051 to gateway pods),
// "cidr" (one TCP port to CIDRs, never /0), "dns" (53 to labelled pods in a named namespace),
// or "" (anything else).
func feederEgress(r networkingv1.NetworkPolicyEgressRule, gateways []*workload) string {
	if len(r.To) == 0 {
		return ""
	}
	all := func(pred func(networkingv1.NetworkPolicyPeer) bool) bool {
		for _, t := range r.To {
			if !pred(t) {
				return false
			}
		}
		return true
	}
	switch {
	case portsAre(r.Ports, "TCP/50051") && all(func(t networkingv1.NetworkPolicyPeer) bool {
		for _, gw := range gateways {
			if onlyNamespace(t, gw.namespace) && podsOf(t, gw) {
				return true
			}
		}
		return false
	}):
		return "gateway"
	case portsAre(r.Ports, "UDP/53", "TCP/53") && all(func(t networkingv1.NetworkPolicyPeer) bool {
		return t.IPBlock == nil && t.NamespaceSelector != nil && len(t.NamespaceSelector.MatchLabels[nsNameLabel]) > 0 &&
			t.PodSelector != nil && len(t.PodSelector.MatchLabels) > 0
	}):
		return "dns"
	}
	if len(r.Ports) != 1 || r.Ports[0].Port == nil || r.Ports[0].EndPort != nil ||
		(r.Ports[0].Protocol != nil && *r.Ports[0].Protocol != corev1.ProtocolTCP) {
		return ""
	}
	if all(func(t networkingv1.NetworkPolicyPeer) bool {
		if t.IPBlock == nil || t.PodSelector != nil || t.NamespaceSelector != nil {
			return false
		}
		_, n, err := net.ParseCIDR(t.IPBlock.CIDR)
		if err != nil {
			return false
		}
		ones, _ := n.Mask.Size()
		return ones > 0
	}) {
		return "cidr"
	}
	return ""
}
