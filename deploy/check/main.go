// Command check validates the deployment files without a Docker engine. Run it from
// deploy/check as `go run . -root ../.. -secrets DIR`, DIR written by deploy/gen-secrets.sh.
//
// First, compose.yaml goes through compose-go's loader: the Compose specification's JSON
// schema (compose-spec.json shipped in the module), interpolation, and its consistency checks
// (undefined networks, secrets, configs, volumes).
//
// Then what the schema cannot say: every service runs as a non-root user, read-only, without
// capabilities or new privileges, with resource limits and a health check; published ports
// bind loopback; collectors and the simulator sit on internal networks only; each gateway's
// ingest listener binds its own address on the internal network, and keeps its state_dir (the
// ingest lease) on a named volume of its own, so it outlives the container; every file compose mounts
// exists (secrets: as written by gen-secrets.sh into DIR); every path a gateway or collector
// config names is mounted into that container; Prometheus scrapes every gateway and collector,
// over a network it shares with them, on their metrics port; each collector's gateways and
// sources are reachable from it, on the gateway's ingest port and for its gateway_id; the
// balancer's upstreams are the gateways' public listeners. Every profile is checked (the
// services of `scale` as well as the default ones); -emit writes the default profile's.
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
	"math"
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
	emit := flag.String("emit", "", "also write the services as JSON to this file (for scripts/lab/compose_rehearsal.py)")
	bounds := flag.String("bounds", "", "directory of `entropy-gateway --print-bounds` JSON per gateway config (<config stem>.json), checked against each gateway's memory limit")
	flag.Parse()
	abs, err := filepath.Abs(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}

	// Every profile's services are held to the policy; the rehearsal runs the default profile.
	if project := loadCompose(abs, []string{"*"}); project != nil {
		checkServices(project)
		checkFiles(project, abs, *secrets)
		for _, g := range ofImage(project, gatewayImage) {
			checkGatewayConfig(project, abs, g)
			if *bounds != "" {
				checkGatewayMemory(project, g, *bounds)
			}
		}
		checkGatewayIDs(project, abs)
		for _, c := range ofImage(project, collectorImage) {
			checkCollectorConfig(project, abs, c)
		}
		checkPrometheus(project, abs)
		checkBalancer(project, abs)
	}
	if *emit != "" {
		if project := loadCompose(abs, nil); project != nil {
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

// loadCompose loads compose.yaml with the given profiles enabled ("*": all of them).
func loadCompose(root string, profiles []string) *types.Project {
	opts, err := cli.NewProjectOptions(
		[]string{filepath.Join(root, "compose.yaml")},
		cli.WithWorkingDirectory(root),
		cli.WithEnv([]string{}), // no host environment: the file must stand on its own
		cli.WithResolvedPaths(false),
		cli.WithProfiles(profiles),
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
	fmt.Printf("compose.yaml: schema and consistency ok (project %q, profiles %v: %d services)\n",
		project.Name, profiles, len(project.Services))
	return project
}

const (
	gatewayImage   = "entropy-diode/gateway:dev"
	collectorImage = "entropy-diode/collector:dev"
)

// ofImage lists, sorted, the services that run the given image's own program (the simulator
// runs another program of the collector image: its entrypoint says so).
func ofImage(p *types.Project, image string) []string {
	var out []string
	for name, s := range p.Services {
		if s.Image == image && len(s.Entrypoint) == 0 {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

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
	// The data path must never touch a network that reaches outside.
	for _, name := range append([]string{"simulator"}, ofImage(p, collectorImage)...) {
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
	for _, name := range ofImage(p, collectorImage) {
		if _, onPublic := p.Services[name].Networks["public"]; onPublic {
			fail("%s: on the public network", name)
		}
	}
	for _, name := range ofImage(p, gatewayImage) {
		g := p.Services[name]
		if _, on := g.Networks["public"]; !on {
			fail("%s: not on the public network", name)
		}
		if n := g.Networks["internal"]; n == nil || n.Ipv4Address == "" {
			fail("%s: needs a fixed ipv4_address on the internal network (its ingest listener binds it)", name)
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

// namedVolumeAt: the named volume mounted at path in s ("" for none).
func namedVolumeAt(s types.ServiceConfig, path string) string {
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeVolume && v.Source != "" && filepath.Clean(v.Target) == filepath.Clean(path) {
			return v.Source
		}
	}
	return ""
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

// checkGatewayMemory: the gateway's worst case (`entropy-gateway --print-bounds` of its config,
// read from dir as <config stem>.json) fits the container's memory limit, with the term that
// grows with the runtime's workers taken for the container's CPUs rather than this machine's.
// Past the limit the kernel would kill the gateway under load instead of the gateway shedding
// it.
func checkGatewayMemory(p *types.Project, name, dir string) {
	s := p.Services[name]
	file := ""
	if idx := slices.Index(s.Command, "--config"); idx >= 0 && idx+1 < len(s.Command) {
		for _, c := range s.Configs {
			if target(c.Target, c.Source) == s.Command[idx+1] {
				file = p.Configs[c.Source].File
			}
		}
	}
	if file == "" || s.Deploy == nil || s.Deploy.Resources.Limits == nil {
		return // checkGatewayConfig and checkServices report it
	}
	stem := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	raw, err := os.ReadFile(filepath.Join(dir, stem+".json"))
	if err != nil {
		fail("%s: no --print-bounds of %s: %v", name, file, err)
		return
	}
	var b struct {
		Memory []struct {
			Name  string `json:"name"`
			Bytes int64  `json:"bytes"`
		} `json:"memory"`
		MemoryBytes int64 `json:"memory_bytes"`
		Workers     int64 `json:"workers"`
	}
	if err := json.Unmarshal(raw, &b); err != nil || b.Workers <= 0 {
		fail("%s: bounds of %s unreadable: %v", name, file, err)
		return
	}
	worst := b.MemoryBytes
	cpus := int64(math.Ceil(float64(s.Deploy.Resources.Limits.NanoCPUs)))
	for _, t := range b.Memory {
		if t.Name == "responses being encoded" {
			worst += t.Bytes/b.Workers*max(cpus, 1) - t.Bytes
		}
	}
	limit := int64(s.Deploy.Resources.Limits.MemoryBytes)
	if worst > limit {
		fail("%s: memory limit %d MiB is below the worst case of %s, %d MiB on %d CPU(s) (entropy-gateway --print-bounds; lower max_connections or max_buffered_bytes, or raise the limit)",
			name, limit>>20, file, worst>>20, max(cpus, 1))
	} else {
		fmt.Printf("%s: worst case %d MiB within its memory limit of %d MiB\n", name, worst>>20, limit>>20)
	}
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

func checkGatewayConfig(p *types.Project, root, name string) {
	doc, s, ok := configFile(p, root, name)
	if !ok {
		return
	}
	state, _ := doc["state_dir"].(string)
	delete(doc, "state_dir") // a directory the gateway writes, not a mounted file
	checkPathsMounted(name, doc, mounts(s))
	// The ingest lease must outlive the container: on a volume of the read-only root (or a
	// tmpfs), a re-created gateway would start a new state and could store a chunk twice.
	if vol := namedVolumeAt(s, state); state == "" || vol == "" {
		fail("%s: state_dir %q is not a named volume (the ingest lease must survive the container)", name, state)
	} else {
		for other, o := range p.Services {
			for _, v := range o.Volumes {
				if other != name && v.Type == types.VolumeTypeVolume && v.Source == vol {
					fail("%s and %s: both mount volume %s (one ingest lease per gateway)", name, other, vol)
				}
			}
		}
	}
	ingest, _ := doc["ingest_listen_addr"].(string)
	host, _, err := net.SplitHostPort(ingest)
	if err != nil {
		fail("%s: ingest_listen_addr %q: %v", name, ingest, err)
	} else if n := s.Networks["internal"]; n != nil && host != n.Ipv4Address {
		fail("%s: ingest_listen_addr binds %s, but its internal address is %s", name, host, n.Ipv4Address)
	}
	metrics, _ := doc["metrics_listen_addr"].(string)
	if metrics == "" {
		fail("%s: metrics_listen_addr is not set (health checks and Prometheus need it)", name)
	} else if port(metrics) != healthPort(s) {
		fail("%s: health check probes port %s, metrics listen on %s", name, healthPort(s), metrics)
	}
	if public, _ := doc["listen_addr"].(string); len(s.Ports) > 0 && port(public) != fmt.Sprint(s.Ports[0].Target) {
		fail("%s: listen_addr %s but the published port targets %d", name, public, s.Ports[0].Target)
	}
}

// checkGatewayIDs: gateway_id and the ingest address differ between gateways (a collector seals
// each chunk for one gateway_id; two gateways with one id would both accept it).
func checkGatewayIDs(p *types.Project, root string) {
	ids, addrs := map[string]string{}, map[string]string{}
	for _, name := range ofImage(p, gatewayImage) {
		doc, _, ok := configFile(p, root, name)
		if !ok {
			continue
		}
		id, _ := doc["gateway_id"].(string)
		if other, dup := ids[id]; dup {
			fail("%s and %s: both gateway_id %q", other, name, id)
		}
		ids[id] = name
		ingest, _ := doc["ingest_listen_addr"].(string)
		if other, dup := addrs[ingest]; dup {
			fail("%s and %s: both ingest_listen_addr %q", other, name, ingest)
		}
		addrs[ingest] = name
	}
}

func checkCollectorConfig(p *types.Project, root, name string) {
	doc, s, ok := configFile(p, root, name)
	if !ok {
		return
	}
	checkPathsMounted(name, doc, mounts(s))
	metrics, _ := doc["metrics_listen_addr"].(string)
	if metrics == "" {
		fail("%s: metrics_listen_addr is not set (health checks and Prometheus need it)", name)
	} else if port(metrics) != healthPort(s) {
		fail("%s: health check probes port %s, metrics listen on %s", name, healthPort(s), metrics)
	}
	keyID, _ := doc["key_id"].(string)
	reach := func(what, raw string) (string, bool) {
		u, err := url.Parse(raw)
		if err != nil {
			fail("%s: %s %q: %v", name, what, raw, err)
			return "", false
		}
		other, ok := p.Services[u.Hostname()]
		if !ok {
			fail("%s: %s %q names no service", name, what, raw)
			return "", false
		}
		if !shareNetwork(s, other) {
			fail("%s: %s %q is on no network %s is on", name, what, raw, name)
		}
		return u.Hostname(), true
	}
	gateways, _ := doc["gateway"].([]map[string]any)
	if len(gateways) == 0 {
		fail("%s: publishes to no [[gateway]]", name)
	}
	for _, g := range gateways {
		e, _ := g["endpoint"].(string)
		svc, ok := reach("gateway endpoint", e)
		if !ok {
			continue
		}
		if !slices.Contains(ofImage(p, gatewayImage), svc) {
			fail("%s: gateway endpoint %q is not a gateway service", name, e)
			continue
		}
		gdoc, gs, ok := configFile(p, root, svc)
		if !ok {
			continue
		}
		ingest, _ := gdoc["ingest_listen_addr"].(string)
		if u, _ := url.Parse(e); u.Port() != port(ingest) {
			fail("%s: endpoint %q, but %s's ingest listens on %s", name, e, svc, ingest)
		}
		// The chunk is sealed for the entry's id; the gateway accepts only its own gateway_id.
		if id, _ := g["id"].(string); id != gdoc["gateway_id"] {
			fail("%s: [[gateway]] id %q for %s, whose gateway_id is %v", name, id, svc, gdoc["gateway_id"])
		}
		// The key the collector signs with is the file the gateway mounts as <key_id>.key.
		found := false
		for t := range mounts(gs) {
			if filepath.Base(t) == keyID+".key" {
				found = true
			}
		}
		if !found {
			fail("%s: key_id %q, but %s mounts no %s.key", name, keyID, svc, keyID)
		}
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

// checkPrometheus: the entropy-gateway job scrapes every gateway service and the
// entropy-collector job every collector service (static targets or DNS names), each over a
// network Prometheus shares with it, on its metrics port; nothing else.
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
			DNSSDConfigs []struct {
				Names []string `yaml:"names"`
				Type  string   `yaml:"type"`
				Port  int      `yaml:"port"`
			} `yaml:"dns_sd_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		fail("prometheus.yml: %v", err)
		return
	}
	want := map[string]string{"entropy-gateway": gatewayImage, "entropy-collector": collectorImage}
	for _, sc := range cfg.ScrapeConfigs {
		image, ours := want[sc.JobName]
		if !ours {
			continue
		}
		delete(want, sc.JobName)
		scraped := map[string]bool{}
		target := func(host, prt string) {
			s, ok := p.Services[host]
			if !ok || !slices.Contains(ofImage(p, image), host) {
				fail("prometheus.yml: job %s scrapes %s:%s, which is not a service running %s", sc.JobName, host, prt, image)
				return
			}
			scraped[host] = true
			if !shareNetwork(prom, s) {
				fail("prometheus: shares no network with %s, so it cannot scrape it", host)
			}
			if hp := healthPort(s); prt != hp {
				fail("prometheus.yml: job %s scrapes %s on port %s, its metrics port is %s", sc.JobName, host, prt, hp)
			}
		}
		for _, st := range sc.StaticConfigs {
			for _, t := range st.Targets {
				host, prt, err := net.SplitHostPort(t)
				if err != nil {
					fail("prometheus.yml: job %s: target %q: %v", sc.JobName, t, err)
					continue
				}
				target(host, prt)
			}
		}
		for _, d := range sc.DNSSDConfigs {
			if d.Type != "A" {
				fail("prometheus.yml: job %s: dns_sd_configs type %q (compose's DNS answers A records)", sc.JobName, d.Type)
			}
			for _, n := range d.Names {
				target(n, fmt.Sprint(d.Port))
			}
		}
		for _, svc := range ofImage(p, image) {
			if !scraped[svc] {
				fail("prometheus.yml: job %s does not scrape %s", sc.JobName, svc)
			}
		}
	}
	for job := range want {
		fail("prometheus.yml: no job %s", job)
	}
}

// checkBalancer: the balancer's upstreams (GATEWAY_1.. in its environment, read by
// deploy/haproxy/haproxy.cfg) are the gateway services' public listeners, every gateway of
// the balancer's profile is one, and the name it verifies is in the gateway certificate's
// names (deploy/gen-secrets.sh passes them to dev-certs as --host).
func checkBalancer(p *types.Project, root string) {
	lb, ok := p.Services["haproxy"]
	if !ok {
		return
	}
	env := func(k string) string {
		if v := lb.Environment[k]; v != nil {
			return *v
		}
		return ""
	}
	upstream := map[string]bool{}
	for i := 1; env(fmt.Sprintf("GATEWAY_%d", i)) != ""; i++ {
		addr := env(fmt.Sprintf("GATEWAY_%d", i))
		host, prt, err := net.SplitHostPort(addr)
		if err != nil {
			fail("haproxy: GATEWAY_%d %q: %v", i, addr, err)
			continue
		}
		g, ok := p.Services[host]
		if !ok || !slices.Contains(ofImage(p, gatewayImage), host) {
			fail("haproxy: GATEWAY_%d %q is not a gateway service", i, addr)
			continue
		}
		upstream[host] = true
		if !shareNetwork(lb, g) {
			fail("haproxy: shares no network with %s", host)
		}
		if doc, _, ok := configFile(p, root, host); ok {
			if listen, _ := doc["listen_addr"].(string); port(listen) != prt {
				fail("haproxy: GATEWAY_%d %q, but %s listens on %s", i, addr, host, listen)
			}
		}
	}
	if len(upstream) < 2 {
		fail("haproxy: %d gateway(s) behind the balancer", len(upstream))
	}
	for _, g := range ofImage(p, gatewayImage) {
		if !upstream[g] && slices.Equal(p.Services[g].Profiles, lb.Profiles) {
			fail("haproxy: %s (profile %v) is not behind the balancer", g, lb.Profiles)
		}
	}
	script, err := os.ReadFile(filepath.Join(root, "deploy/gen-secrets.sh"))
	if err != nil {
		fail("gen-secrets.sh: %v", err)
		return
	}
	if name := env("GATEWAY_TLS_NAME"); name == "" || !strings.Contains(string(script), "--host "+name+" ") {
		fail("haproxy: GATEWAY_TLS_NAME %q is not a name gen-secrets.sh puts in the gateway certificate", name)
	}
	for _, k := range []string{"LB_BIND", "LB_CERT", "GATEWAY_CA", "STATS_SOCKET"} {
		if env(k) == "" {
			fail("haproxy: %s is not set (deploy/haproxy/haproxy.cfg reads it)", k)
		}
	}
	m := mounts(lb)
	for _, k := range []string{"LB_CERT", "GATEWAY_CA"} {
		if v := env(k); v != "" && !m[v] {
			fail("haproxy: %s = %q is not mounted", k, v)
		}
	}
}

// --- metric names ---------------------------------------------------------------------------

var metricRe = regexp.MustCompile(`\bentropy_(?:gateway|collector|feeder)_[a-z0-9_]+`)

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

// emitted is one service as scripts/lab/compose_rehearsal.py runs it without Docker.
type emitted struct {
	Image       string            `json:"image"`
	BuildTarget string            `json:"build_target"` // stage of deploy/Dockerfile, "" for a pulled image
	Entrypoint  []string          `json:"entrypoint"`
	Command     []string          `json:"command"`
	User        string            `json:"user"`
	Healthcheck []string          `json:"healthcheck"`
	Networks    map[string]string `json:"networks"` // name -> fixed ipv4 address or ""
	Mounts      map[string]string `json:"mounts"`   // container path -> host file
	Volumes     map[string]string `json:"volumes"`  // container path -> named volume
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
			Networks: map[string]string{}, Mounts: map[string]string{}, Volumes: map[string]string{}}
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
		for _, v := range s.Volumes {
			if v.Type == types.VolumeTypeVolume {
				e.Volumes[v.Target] = v.Source
			}
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
