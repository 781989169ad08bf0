// Command k8s-check lints and renders the entropy-diode Helm chart with Helm's own packages
// (`helm lint --strict`, `helm template`), decodes every rendered object strictly into its
// Kubernetes API type, runs the rendered gateway, collector and feeder configs through the
// binaries' `--print-config`, and checks the policy the types cannot express (see policy.go,
// netpol.go, feeder.go).
//
//	k8s-check -chart ../helm/entropy-diode [-values FILE] -bin DIR   render and check
//	k8s-check -manifest FILE -bin DIR                                 check a rendered file
//
// Prints one summary line when all is well; otherwise every problem, and exits 1.
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
)

func main() {
	var o renderOptions
	var manifestFile, binDir, out, monitoring string
	flag.StringVar(&o.chartDir, "chart", "", "chart directory to lint and render")
	flag.StringVar(&o.valuesFile, "values", "", "values file (helm -f), optional")
	flag.StringVar(&o.release, "release", "entropy-diode", "release name")
	flag.StringVar(&o.namespace, "namespace", "entropy", "release namespace (the gateways')")
	flag.StringVar(&o.kubeVersion, "kube-version", "1.34.0", "Kubernetes version to render for")
	flag.StringVar(&manifestFile, "manifest", "", "check this rendered manifest instead of a chart")
	flag.StringVar(&binDir, "bin", "", "directory of entropy-gateway and entropy-collector (required)")
	flag.StringVar(&out, "out", "", "also write the rendered manifest here")
	flag.StringVar(&monitoring, "monitoring-namespace", "monitoring", "the namespace allowed to scrape metrics")
	flag.Parse()
	if binDir == "" || (o.chartDir == "") == (manifestFile == "") {
		fmt.Fprintln(os.Stderr, "k8s-check: give -bin, and one of -chart or -manifest")
		os.Exit(2)
	}

	var manifest, what string
	if o.chartDir != "" {
		what = o.chartDir
		if o.valuesFile != "" {
			what += " -f " + o.valuesFile
		}
		if err := lintStrict(o); err != nil {
			die(what, err)
		}
		m, err := render(o)
		if err != nil {
			die(what, fmt.Errorf("helm template: %w", err))
		}
		manifest = m
	} else {
		what = manifestFile
		b, err := os.ReadFile(manifestFile)
		if err != nil {
			die(what, err)
		}
		manifest = string(b)
	}
	if out != "" {
		if err := os.WriteFile(out, []byte(manifest), 0o644); err != nil {
			die(what, err)
		}
	}

	objs, errs := decodeAll(manifest)
	c := newChecker(objs, binDir, monitoring)
	c.problems = append(c.problems, errs...)
	if len(errs) == 0 {
		c.run()
	}
	if len(c.problems) > 0 {
		fmt.Fprintf(os.Stderr, "k8s-check %s: %d problems\n", what, len(c.problems))
		for _, p := range c.problems {
			fmt.Fprintln(os.Stderr, "  -", p)
		}
		os.Exit(1)
	}
	fmt.Printf("k8s-check %s: ok: %s\n", what, summary(c))
}

func die(what string, err error) {
	fmt.Fprintf(os.Stderr, "k8s-check %s: %v\n", what, err)
	os.Exit(1)
}

// summary: the object count by kind, and what the gateways and collectors were checked for.
func summary(c *checker) string {
	count := map[string]int{}
	for _, o := range c.objs {
		count[o.kind]++
	}
	var kinds []string
	for k, n := range count {
		kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(kinds)
	var parts []string
	for _, w := range c.workloads {
		switch w.component() {
		case "gateway":
			parts = append(parts, fmt.Sprintf("gateways up to %d", c.maxGateways(w)))
		case "collector":
			n := 0
			for _, eff := range w.configs {
				n = len(eff.tables("gateway"))
			}
			parts = append(parts, fmt.Sprintf("collectors %d in %s listing %d gateways", w.replicas, w.namespace, n))
		case "feeder":
			how := "--print-config"
			if c.feederParsedOnly {
				how = "parsed only, no entropy-feeder binary"
			}
			parts = append(parts, fmt.Sprintf("feeders per node in %s (config %s)", w.namespace, how))
		}
	}
	return fmt.Sprintf("%d objects (%s); %s; configs pass --print-config; policy ok",
		len(c.objs), strings.Join(kinds, ", "), strings.Join(parts, ", "))
}
