// Command check validates the deployment files without a Docker engine. Run it from
// deploy/check as `go run . -root ../.. -secrets DIR`, DIR written by deploy/gen-secrets.sh.
//
// First, compose.yaml goes through compose-go's loader: the Compose specification's JSON
// schema (compose-spec.json shipped in the module), interpolation, and its consistency checks
// (undefined networks, secrets, configs, volumes).
//
// Then what the schema cannot say: every service runs as a non-root user, read-only, without
// capabilities or new privileges, with resource limits and a health check; published ports
// bind loopback; the collector and the simulator sit on internal networks only; the gateway's
// ingest listener binds its address on the internal network; every file compose mounts exists
// (secrets: as written by gen-secrets.sh into DIR); every path the gateway and collector
// configs name is mounted into that container; Prometheus scrapes services it shares a
// network with, on their metrics port; the collector's gateway and source hosts are reachable
// from it.
//
// Last, metric names: every entropy_* series the Grafana dashboard and the alert rules use is
// in the metric contract (contract.txt) and in docs/metrics.md, the reference of what the
// binaries expose.
//
// Every problem is printed; the exit status is 1 if there was any.
//
// Kept because nothing else checks the deployment files themselves without a Docker engine:
// compose_rehearsal.py runs what this reads, but only this holds every file to the policy.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v4"
)

var problems []string

func fail(format string, args ...any) {
	problems = append(problems, fmt.Sprintf(format, args...))
}

func main() {
	root := flag.String("root", "../..", "repository root")
	secrets := flag.String("secrets", "", "directory written by deploy/gen-secrets.sh (stands in for deploy/secrets)")
	emit := flag.String("emit", "", "also write the services as JSON to this file (for scripts/compose_rehearsal.py)")
	flag.Parse()
	abs, err := filepath.Abs(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}

	project := loadCompose(abs)
	if project != nil {
		checkServices(project)
		checkFiles(project, abs, *secrets)
		checkGatewayConfig(project, abs)
		checkCollectorConfig(project, abs)
		checkPrometheus(project, abs)
		if *emit != "" {
			emitServices(project, abs, *secrets, *emit)
		}
	}
	checkMetricNames(abs)

	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Println("FAIL", p)
		}
		fmt.Printf("deploy check: %d problem(s)\n", len(problems))
		os.Exit(1)
	}
	fmt.Println("deploy check: compose.yaml valid (schema, consistency, policy), configs consistent, metric names in the contract")
}

func loadCompose(root string) *types.Project {
	opts, err := cli.NewProjectOptions(
		[]string{filepath.Join(root, "compose.yaml")},
		cli.WithWorkingDirectory(root),
		cli.WithEnv([]string{}), // no host environment: the file must stand on its own
		cli.WithResolvedPaths(false),
	)
	if err != nil {
		fail("compose options: %v", err)
		return nil
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		fail("compose.yaml: %v", err)
		return nil
	}
	fmt.Printf("compose.yaml: schema and consistency ok (project %q, %d services)\n", project.Name, len(project.Services))
	return project
}

// The data path must never touch a network that reaches outside.
var internalOnly = []string{"collector", "simulator"}

func checkServices(p *types.Project) {
	for _, name := range []string{"simulator", "collector", "gateway", "prometheus"} {
		if _, ok := p.Services[name]; !ok {
			fail("service %s is missing", name)
		}
	}
	for name, s := range p.Services {
		user := strings.SplitN(s.User, ":", 2)[0]
		if user == "" || user == "0" || user == "root" {
			fail("%s: runs as root (set user: to an unprivileged uid)", name)
		}
		if !s.ReadOnly {
			fail("%s: root filesystem is writable (read_only: true)", name)
		}
		if !slices.Contains(s.CapDrop, "ALL") {
			fail("%s: capabilities not dropped (cap_drop: [ALL])", name)
		}
		if !slices.Contains(s.SecurityOpt, "no-new-privileges:true") {
			fail("%s: missing security_opt no-new-privileges:true", name)
		}
		if s.Privileged || s.NetworkMode == "host" || s.Pid == "host" {
			fail("%s: privileged or host namespaces", name)
		}
		if s.HealthCheck == nil || s.HealthCheck.Disable || len(s.HealthCheck.Test) == 0 {
			fail("%s: no health check", name)
		}
		if s.Deploy == nil || s.Deploy.Resources.Limits == nil ||
			s.Deploy.Resources.Limits.NanoCPUs == 0 || s.Deploy.Resources.Limits.MemoryBytes == 0 ||
			s.Deploy.Resources.Limits.Pids == 0 {
			fail("%s: no cpus/memory/pids limits (deploy.resources.limits)", name)
		}
		for _, port := range s.Ports {
			if port.HostIP != "127.0.0.1" && port.HostIP != "::1" {
				fail("%s: port %d published on %q, not the host's loopback", name, port.Target, port.HostIP)
			}
		}
		for _, v := range s.Volumes {
			if v.Type == types.VolumeTypeBind {
				fail("%s: bind mount %s (use configs/secrets for files)", name, v.Source)
			}
		}
		for k, v := range s.Environment {
			if v != nil && (strings.Contains(k, "PASSWORD") || strings.Contains(k, "SECRET") || strings.Contains(k, "API_KEY")) &&
				!strings.HasSuffix(k, "__FILE") {
				fail("%s: secret-looking variable %s in the environment (mount it as a secret file)", name, k)
			}
		}
		if len(s.Networks) == 0 {
			fail("%s: on the default network (name its networks)", name)
		}
	}
	for _, name := range internalOnly {
		s, ok := p.Services[name]
		if !ok {
			continue
		}
		for net := range s.Networks {
			if !p.Networks[net].Internal {
				fail("%s: on network %q, which is not internal: true", name, net)
			}
		}
		if len(s.Ports) > 0 {
			fail("%s: publishes ports", name)
		}
	}
	if c, ok := p.Services["collector"]; ok {
		if _, onPublic := c.Networks["public"]; onPublic {
			fail("collector: on the public network")
		}
	}
	if g, ok := p.Services["gateway"]; ok {
		if _, on := g.Networks["public"]; !on {
			fail("gateway: not on the public network")
		}
		if n := g.Networks["internal"]; n == nil || n.Ipv4Address == "" {
			fail("gateway: needs a fixed ipv4_address on the internal network (its ingest listener binds it)")
		}
	}
}

// checkFiles: every configs/secrets file exists; files under deploy/secrets are looked up in
// the directory gen-secrets.sh wrote.
func checkFiles(p *types.Project, root, secretsDir string) {
	resolve := func(file string) string {
		rel := filepath.ToSlash(file)
		if strings.HasPrefix(rel, "deploy/secrets/") {
			if secretsDir == "" {
				return ""
			}
			return filepath.Join(secretsDir, strings.TrimPrefix(rel, "deploy/secrets/"))
		}
		if filepath.IsAbs(file) {
			return file
		}
		return filepath.Join(root, file)
	}
	check := func(kind, name, file string) {
		if file == "" {
			fail("%s %s: no file", kind, name)
			return
		}
		if filepath.IsAbs(file) {
			if r, err := filepath.Rel(root, file); err == nil && !strings.HasPrefix(r, "..") {
				file = r
			}
		}
		path := resolve(file)
		if path == "" {
			return // secrets not generated for this run
		}
		if info, err := os.Stat(path); err != nil || info.IsDir() {
			fail("%s %s: file %s does not exist", kind, name, path)
		}
		if kind == "secret" && !strings.HasPrefix(filepath.ToSlash(file), "deploy/secrets/") {
			fail("secret %s: %s is outside deploy/secrets (never commit secrets)", name, file)
		}
	}
	for name, c := range p.Configs {
		check("config", name, c.File)
	}
	for name, s := range p.Secrets {
		check("secret", name, s.File)
	}
	for name, s := range p.Services {
		if s.Build != nil {
			df := filepath.Join(root, s.Build.Context, s.Build.Dockerfile)
			if _, err := os.Stat(df); err != nil {
				fail("%s: Dockerfile %s does not exist", name, df)
			}
		}
	}
}

// mounts: container path -> true, for a service's configs and secrets.
func mounts(s types.ServiceConfig) map[string]bool {
	m := map[string]bool{}
	for _, c := range s.Configs {
		m[target(c.Target, c.Source)] = true
	}
	for _, c := range s.Secrets {
		m[target(c.Target, c.Source)] = true
	}
	return m
}

func target(t, source string) string {
	if t == "" {
		return "/run/secrets/" + source
	}
	if !strings.HasPrefix(t, "/") {
		return "/run/secrets/" + t
	}
	return t
}

// configFile finds the TOML a service is started with (--config PATH) and reads it from
// the repository through the configs entry mounted there.
func configFile(p *types.Project, root, service string) (map[string]any, types.ServiceConfig, bool) {
	s, ok := p.Services[service]
	if !ok {
		return nil, s, false
	}
	idx := slices.Index(s.Command, "--config")
	if idx < 0 || idx+1 >= len(s.Command) {
		fail("%s: not started with --config", service)
		return nil, s, false
	}
	inContainer := s.Command[idx+1]
	for _, c := range s.Configs {
		if target(c.Target, c.Source) == inContainer {
			file := p.Configs[c.Source].File
			if !filepath.IsAbs(file) {
				file = filepath.Join(root, file)
			}
			var doc map[string]any
			if _, err := toml.DecodeFile(file, &doc); err != nil {
				fail("%s: %s: %v", service, file, err)
				return nil, s, false
			}
			return doc, s, true
		}
	}
	fail("%s: --config %s is not a mounted config", service, inContainer)
	return nil, s, false
}

// mountedPaths: every string value in the TOML that is an absolute path must be mounted
// (a file) or be the directory of a mounted file.
func checkPathsMounted(service string, doc map[string]any, m map[string]bool) {
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, vv := range x {
				walk(prefix+k+".", vv)
			}
		case []map[string]any:
			for i, vv := range x {
				walk(fmt.Sprintf("%s%d.", prefix, i), vv)
			}
		case string:
			if !strings.HasPrefix(x, "/") {
				return
			}
			key := strings.TrimSuffix(prefix, ".")
			if strings.HasSuffix(key, "_dir") {
				for t := range m {
					if filepath.Dir(t) == x {
						return
					}
				}
				fail("%s: %s = %q: no file is mounted in that directory", service, key, x)
				return
			}
			if !m[x] {
				fail("%s: %s = %q is not mounted (configs/secrets)", service, key, x)
			}
		}
	}
	walk("", doc)
}

func port(addr string) string {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	return p
}

func healthPort(s types.ServiceConfig) string {
	if s.HealthCheck == nil {
		return ""
	}
	test := s.HealthCheck.Test
	for i, a := range test {
		if strings.HasSuffix(a, "healthcheck.sh") {
			if i+2 < len(test) {
				return test[i+2]
			}
			return "9464"
		}
	}
	return ""
}

func checkGatewayConfig(p *types.Project, root string) {
	doc, s, ok := configFile(p, root, "gateway")
	if !ok {
		return
	}
	checkPathsMounted("gateway", doc, mounts(s))
	ingest, _ := doc["ingest_listen_addr"].(string)
	host, _, err := net.SplitHostPort(ingest)
	if err != nil {
		fail("gateway: ingest_listen_addr %q: %v", ingest, err)
	} else if n := s.Networks["internal"]; n != nil && host != n.Ipv4Address {
		fail("gateway: ingest_listen_addr binds %s, but the gateway's internal address is %s", host, n.Ipv4Address)
	}
	metrics, _ := doc["metrics_listen_addr"].(string)
	if metrics == "" {
		fail("gateway: metrics_listen_addr is not set (health checks and Prometheus need it)")
	} else if port(metrics) != healthPort(s) {
		fail("gateway: health check probes port %s, metrics listen on %s", healthPort(s), metrics)
	}
	if public, _ := doc["listen_addr"].(string); len(s.Ports) > 0 && port(public) != fmt.Sprint(s.Ports[0].Target) {
		fail("gateway: listen_addr %s but the published port targets %d", public, s.Ports[0].Target)
	}
}

func checkCollectorConfig(p *types.Project, root string) {
	doc, s, ok := configFile(p, root, "collector")
	if !ok {
		return
	}
	checkPathsMounted("collector", doc, mounts(s))
	metrics, _ := doc["metrics_listen_addr"].(string)
	if metrics == "" {
		fail("collector: metrics_listen_addr is not set (health checks and Prometheus need it)")
	} else if port(metrics) != healthPort(s) {
		fail("collector: health check probes port %s, metrics listen on %s", healthPort(s), metrics)
	}
	// The gateway key the collector signs with is the file the gateway mounts as <key_id>.key.
	keyID, _ := doc["key_id"].(string)
	if g, ok := p.Services["gateway"]; ok {
		found := false
		for t := range mounts(g) {
			if filepath.Base(t) == keyID+".key" {
				found = true
			}
		}
		if !found {
			fail("collector: key_id %q, but the gateway mounts no %s.key", keyID, keyID)
		}
	}
	reach := func(what, raw string) {
		u, err := url.Parse(raw)
		if err != nil {
			fail("collector: %s %q: %v", what, raw, err)
			return
		}
		other, ok := p.Services[u.Hostname()]
		if !ok {
			fail("collector: %s %q names no service", what, raw)
			return
		}
		if !shareNetwork(s, other) {
			fail("collector: %s %q is on no network the collector is on", what, raw)
		}
		if u.Hostname() == "gateway" {
			var ingest string
			if gdoc, _, ok := configFile(p, root, "gateway"); ok {
				ingest, _ = gdoc["ingest_listen_addr"].(string)
			}
			if u.Port() != port(ingest) {
				fail("collector: gateway endpoint port %s, gateway ingest listens on %s", u.Port(), ingest)
			}
		}
	}
	gateways, _ := doc["gateway"].([]map[string]any)
	for _, g := range gateways {
		e, _ := g["endpoint"].(string)
		reach("gateway endpoint", e)
	}
	sources, _ := doc["source"].([]map[string]any)
	for _, src := range sources {
		if u, ok := src["url"].(string); ok {
			reach("source url", u)
		}
	}
}

func shareNetwork(a, b types.ServiceConfig) bool {
	for n := range a.Networks {
		if _, ok := b.Networks[n]; ok {
			return true
		}
	}
	return false
}

func checkPrometheus(p *types.Project, root string) {
	prom, ok := p.Services["prometheus"]
	if !ok {
		return
	}
	raw, err := os.ReadFile(filepath.Join(root, "deploy/prometheus/prometheus.yml"))
	if err != nil {
		fail("prometheus.yml: %v", err)
		return
	}
	var cfg struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		fail("prometheus.yml: %v", err)
		return
	}
	want := map[string]string{"entropy-gateway": "gateway", "entropy-collector": "collector"}
	for _, sc := range cfg.ScrapeConfigs {
		svc, ours := want[sc.JobName]
		if !ours {
			continue
		}
		delete(want, sc.JobName)
		for _, st := range sc.StaticConfigs {
			for _, t := range st.Targets {
				host, prt, err := net.SplitHostPort(t)
				if err != nil || host != svc {
					fail("prometheus.yml: job %s scrapes %q, not the %s service", sc.JobName, t, svc)
					continue
				}
				if !shareNetwork(prom, p.Services[svc]) {
					fail("prometheus: shares no network with %s, so it cannot scrape it", svc)
				}
				if hp := healthPort(p.Services[svc]); prt != hp {
					fail("prometheus.yml: job %s scrapes port %s, %s's metrics port is %s", sc.JobName, prt, svc, hp)
				}
			}
		}
	}
	for job := range want {
		fail("prometheus.yml: no job %s", job)
	}
}

// --- metric names ---------------------------------------------------------------------------

var metricRe = regexp.MustCompile(`\bentropy_(?:gateway|collector)_[a-z0-9_]+`)

func names(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range metricRe.FindAllString(text, -1) {
		out[m] = true
	}
	return out
}

// known reports whether a referenced series is in the set, allowing a histogram's
// _bucket/_count/_sum series.
func known(set map[string]bool, name string) bool {
	if set[name] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && set[base] {
			return true
		}
	}
	return false
}

func checkMetricNames(root string) {
	used := map[string][]string{}
	add := func(file string) {
		raw, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			fail("%s: %v", file, err)
			return
		}
		text := string(raw)
		if strings.HasSuffix(file, ".json") {
			// Only the queries: descriptions may mention anything.
			var dash struct {
				Panels []struct {
					Targets []struct {
						Expr string `json:"expr"`
					} `json:"targets"`
				} `json:"panels"`
			}
			if err := json.Unmarshal(raw, &dash); err != nil {
				fail("%s: %v", file, err)
				return
			}
			text = ""
			for _, p := range dash.Panels {
				for _, t := range p.Targets {
					text += t.Expr + "\n"
				}
			}
		}
		for n := range names(text) {
			used[n] = append(used[n], file)
		}
	}
	add("deploy/grafana/entropy-diode.json")
	add("deploy/prometheus/alerts.yml")
	if len(used) == 0 {
		fail("no entropy_* series found in the dashboard or the alerts")
	}

	sources := []string{"deploy/check/contract.txt", "docs/metrics.md"}
	for _, src := range sources {
		raw, err := os.ReadFile(filepath.Join(root, src))
		if err != nil {
			fail("%s: %v", src, err)
			continue
		}
		set := names(string(raw))
		var missing []string
		for n := range used {
			if !known(set, n) {
				missing = append(missing, fmt.Sprintf("%s (used in %s)", n, strings.Join(used[n], ", ")))
			}
		}
		sort.Strings(missing)
		for _, m := range missing {
			fail("series %s is not in %s", m, src)
		}
		if len(missing) == 0 {
			fmt.Printf("metric names: all %d entropy_* series of the dashboard and alerts are in %s\n", len(used), src)
		}
	}
}

// --- emit -----------------------------------------------------------------------------------

// emitted is one service as scripts/compose_rehearsal.py runs it without Docker.
type emitted struct {
	Image       string            `json:"image"`
	BuildTarget string            `json:"build_target"` // stage of deploy/Dockerfile, "" for a pulled image
	Entrypoint  []string          `json:"entrypoint"`
	Command     []string          `json:"command"`
	User        string            `json:"user"`
	Healthcheck []string          `json:"healthcheck"`
	Networks    map[string]string `json:"networks"` // name -> fixed ipv4 address or ""
	Mounts      map[string]string `json:"mounts"`   // container path -> host file
}

func emitServices(p *types.Project, root, secretsDir, out string) {
	hostFile := func(file string) string {
		if filepath.IsAbs(file) {
			if r, err := filepath.Rel(root, file); err == nil && !strings.HasPrefix(r, "..") {
				file = r
			}
		}
		if rest, ok := strings.CutPrefix(filepath.ToSlash(file), "deploy/secrets/"); ok && secretsDir != "" {
			return filepath.Join(secretsDir, rest)
		}
		return filepath.Join(root, file)
	}
	services := map[string]emitted{}
	for name, s := range p.Services {
		e := emitted{Image: s.Image, Entrypoint: s.Entrypoint, Command: s.Command, User: s.User,
			Networks: map[string]string{}, Mounts: map[string]string{}}
		if s.Build != nil {
			e.BuildTarget = s.Build.Target
		}
		if s.HealthCheck != nil {
			e.Healthcheck = s.HealthCheck.Test
		}
		for n, cfg := range s.Networks {
			e.Networks[n] = ""
			if cfg != nil {
				e.Networks[n] = cfg.Ipv4Address
			}
		}
		for _, c := range s.Configs {
			e.Mounts[target(c.Target, c.Source)] = hostFile(p.Configs[c.Source].File)
		}
		for _, c := range s.Secrets {
			e.Mounts[target(c.Target, c.Source)] = hostFile(p.Secrets[c.Source].File)
		}
		services[name] = e
	}
	raw, err := json.MarshalIndent(services, "", "  ")
	if err == nil {
		err = os.WriteFile(out, raw, 0o644)
	}
	if err != nil {
		fail("emit %s: %v", out, err)
	}
}
