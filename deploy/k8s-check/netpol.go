// netpol.go: the diode in NetworkPolicies. Collectors: default deny both ways in their
// namespace; egress only to the gateways' ingest port, cluster DNS, appliance CIDRs and the
// demo simulator; ingress only to metrics from the monitoring namespace. Gateways: ingest
// only from collector pods, metrics only from monitoring, no egress at all. Feeders: in
// feeder.go.

package main

import (
	"fmt"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

const nsNameLabel = "kubernetes.io/metadata.name"

type policy struct {
	object
	np *networkingv1.NetworkPolicy
}

func (c *checker) policies() []policy {
	var out []policy
	for _, o := range c.objs {
		if np, ok := o.obj.(*networkingv1.NetworkPolicy); ok {
			out = append(out, policy{o, np})
		}
	}
	return out
}

// selects: the policy applies to w's pods.
func (p policy) selects(w *workload) bool {
	sel, err := metav1.LabelSelectorAsSelector(&p.np.Spec.PodSelector)
	return err == nil && p.namespace == w.namespace && sel.Matches(labels.Set(w.labels))
}

func (p policy) hasType(t networkingv1.PolicyType) bool {
	for _, x := range p.np.Spec.PolicyTypes {
		if x == t {
			return true
		}
	}
	return false
}

// onlyNamespace: the peer's namespaceSelector names exactly namespace ns.
func onlyNamespace(peer networkingv1.NetworkPolicyPeer, ns string) bool {
	s := peer.NamespaceSelector
	return s != nil && len(s.MatchExpressions) == 0 && len(s.MatchLabels) == 1 && s.MatchLabels[nsNameLabel] == ns
}

// podsOf: the peer's podSelector is not empty and selects w's pods.
func podsOf(peer networkingv1.NetworkPolicyPeer, w *workload) bool {
	if peer.PodSelector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
	return err == nil && !sel.Empty() && sel.Matches(labels.Set(w.labels))
}

// portsAre: the rule names ports, each a number in allowed (protocol/port).
func portsAre(ports []networkingv1.NetworkPolicyPort, allowed ...string) bool {
	if len(ports) == 0 {
		return false
	}
	for _, p := range ports {
		proto := corev1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		if p.Port == nil || p.EndPort != nil {
			return false
		}
		ok := false
		for _, a := range allowed {
			if a == fmt.Sprintf("%s/%s", proto, p.Port.String()) {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func (c *checker) byComponent(component string) []*workload {
	var out []*workload
	for _, w := range c.workloads {
		if w.component() == component {
			out = append(out, w)
		}
	}
	return out
}

func (c *checker) checkNetworkPolicies() {
	gateways, simulators := c.byComponent("gateway"), c.byComponent("simulator")
	for _, col := range c.byComponent("collector") {
		c.checkDefaultDeny(col)
		var in, out bool
		for _, p := range c.policies() {
			if !p.selects(col) {
				continue
			}
			in = in || p.hasType(networkingv1.PolicyTypeIngress)
			out = out || p.hasType(networkingv1.PolicyTypeEgress)
			for _, r := range p.np.Spec.Ingress {
				ok := portsAre(r.Ports, "TCP/9464") && len(r.From) > 0
				for _, f := range r.From {
					ok = ok && onlyNamespace(f, c.monitoring) && f.IPBlock == nil
				}
				if !ok {
					c.fail(p.object, "collector ingress rule (%s) allows more than port 9464 from namespace %s", describe(r.Ports, r.From), c.monitoring)
				}
			}
			for _, r := range p.np.Spec.Egress {
				if !c.collectorEgressAllowed(r, gateways, simulators, col.namespace) {
					c.fail(p.object, "collector egress rule (%s) allows more than the gateways' ingest port, DNS, appliance CIDRs or the simulator", describe(r.Ports, r.To))
				}
			}
		}
		if !in || !out {
			c.fail(col.object, "collector pods are not isolated for ingress and egress by a NetworkPolicy")
		}
	}
	cols := c.byComponent("collector")
	for _, gw := range gateways {
		var in, out bool
		for _, p := range c.policies() {
			if !p.selects(gw) {
				continue
			}
			in = in || p.hasType(networkingv1.PolicyTypeIngress)
			out = out || p.hasType(networkingv1.PolicyTypeEgress)
			if len(p.np.Spec.Egress) > 0 {
				c.fail(p.object, "gateway egress allowed; a gateway dials nothing")
			}
			for _, r := range p.np.Spec.Ingress {
				switch {
				case portsAre(r.Ports, "TCP/50051"):
				case portsAre(r.Ports, "TCP/9464"):
					ok := len(r.From) > 0
					for _, f := range r.From {
						ok = ok && onlyNamespace(f, c.monitoring)
					}
					if !ok {
						c.fail(p.object, "gateway metrics open to more than namespace %s", c.monitoring)
					}
				case portsAre(r.Ports, "TCP/50052"):
					ok := len(r.From) > 0
					for _, f := range r.From {
						fromCollector := false
						for _, col := range cols {
							fromCollector = fromCollector || (onlyNamespace(f, col.namespace) && podsOf(f, col))
						}
						ok = ok && fromCollector
					}
					if !ok {
						c.fail(p.object, "gateway ingest open to more than the collector pods")
					}
				default:
					c.fail(p.object, "gateway ingress rule (%s): each rule must name one of ports 50051, 50052, 9464", describe(r.Ports, r.From))
				}
			}
		}
		if !in || !out {
			c.fail(gw.object, "gateway pods are not isolated for ingress and egress by a NetworkPolicy")
		}
	}
	c.checkFeederPolicies()
}

// describe a rule for a message: its ports and peers.
func describe(ports []networkingv1.NetworkPolicyPort, peers []networkingv1.NetworkPolicyPeer) string {
	var ps, to []string
	for _, p := range ports {
		proto := corev1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		port := "any"
		if p.Port != nil {
			port = p.Port.String()
		}
		ps = append(ps, fmt.Sprintf("%s/%s", proto, port))
	}
	for _, t := range peers {
		switch {
		case t.IPBlock != nil:
			to = append(to, "ipBlock "+t.IPBlock.CIDR)
		default:
			to = append(to, fmt.Sprintf("namespaces %s pods %s",
				metav1.FormatLabelSelector(t.NamespaceSelector), metav1.FormatLabelSelector(t.PodSelector)))
		}
	}
	if len(ps) == 0 {
		ps = []string{"any port"}
	}
	if len(to) == 0 {
		to = []string{"anywhere"}
	}
	return "ports " + strings.Join(ps, ", ") + "; peers " + strings.Join(to, ", ")
}

// checkDefaultDeny: the collectors' namespace has a policy selecting every pod, denying
// ingress and egress.
func (c *checker) checkDefaultDeny(col *workload) {
	for _, p := range c.policies() {
		s := p.np.Spec
		if p.namespace == col.namespace && len(s.PodSelector.MatchLabels) == 0 && len(s.PodSelector.MatchExpressions) == 0 &&
			p.hasType(networkingv1.PolicyTypeIngress) && p.hasType(networkingv1.PolicyTypeEgress) &&
			len(s.Ingress) == 0 && len(s.Egress) == 0 {
			return
		}
	}
	c.fail(col.object, "namespace %s has no default-deny NetworkPolicy (all pods, ingress and egress, no rules)", col.namespace)
}

// collectorEgressAllowed: r is one of the four kinds of egress a collector may have.
func (c *checker) collectorEgressAllowed(r networkingv1.NetworkPolicyEgressRule, gateways, simulators []*workload, ns string) bool {
	if len(r.To) == 0 {
		return false // to anywhere
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
	case portsAre(r.Ports, "TCP/50052"):
		return all(func(t networkingv1.NetworkPolicyPeer) bool {
			for _, gw := range gateways {
				if onlyNamespace(t, gw.namespace) && podsOf(t, gw) {
					return true
				}
			}
			return false
		})
	case portsAre(r.Ports, "UDP/53", "TCP/53"):
		// Cluster DNS: pods picked by label in one named namespace, never an IP range.
		return all(func(t networkingv1.NetworkPolicyPeer) bool {
			return t.IPBlock == nil && t.NamespaceSelector != nil && len(t.NamespaceSelector.MatchLabels[nsNameLabel]) > 0 &&
				t.PodSelector != nil && len(t.PodSelector.MatchLabels) > 0
		})
	}
	if len(r.Ports) == 0 {
		return false
	}
	appliances := all(func(t networkingv1.NetworkPolicyPeer) bool {
		if t.IPBlock == nil || t.PodSelector != nil || t.NamespaceSelector != nil {
			return false
		}
		_, n, err := net.ParseCIDR(t.IPBlock.CIDR)
		if err != nil {
			return false
		}
		ones, _ := n.Mask.Size()
		return ones > 0 // never 0.0.0.0/0 or ::/0
	})
	simulator := all(func(t networkingv1.NetworkPolicyPeer) bool {
		for _, s := range simulators {
			if t.NamespaceSelector == nil && s.namespace == ns && podsOf(t, s) {
				return true
			}
		}
		return false
	})
	return appliances || simulator
}
