// configs.go: the TOML configs the chart renders, run through the binaries' own validation
// (`--print-config`) with the environment the pod would give them, and the effective config
// they print read back for the policy checks (grace periods, gateway list), with the gateway's
// worst case (`--print-bounds`) for its memory.

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"
	corev1 "k8s.io/api/core/v1"
)

// effective is a config as `<binary> --print-config` prints it.
type effective map[string]any

// podConfig finds the file given as `--config` to container c of pod spec p and returns its
// text from the ConfigMap mounted there.
func podConfig(p *corev1.PodSpec, c *corev1.Container, namespace string, cms map[string]*corev1.ConfigMap) (string, string, error) {
	args := append(append([]string{}, c.Command...), c.Args...)
	path := ""
	for i, a := range args {
		if a == "--config" && i+1 < len(args) {
			path = args[i+1]
		} else if v, ok := strings.CutPrefix(a, "--config="); ok {
			path = v
		}
	}
	if path == "" {
		return "", "", nil
	}
	for _, m := range c.VolumeMounts {
		rel, err := filepath.Rel(m.MountPath, path)
		if err != nil || strings.HasPrefix(rel, "..") || rel == "." {
			continue
		}
		for _, v := range p.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			key := rel
			for _, it := range v.ConfigMap.Items {
				if it.Path == rel {
					key = it.Key
				}
			}
			cm, ok := cms[namespace+"/"+v.ConfigMap.Name]
			if !ok {
				return "", "", fmt.Errorf("--config %s: ConfigMap %s/%s is not rendered", path, namespace, v.ConfigMap.Name)
			}
			text, ok := cm.Data[key]
			if !ok {
				return "", "", fmt.Errorf("--config %s: ConfigMap %s has no key %s", path, cm.Name, key)
			}
			return path, text, nil
		}
	}
	return "", "", fmt.Errorf("--config %s: no ConfigMap volume is mounted there", path)
}

// podEnv is the environment container c would see in pod podName (literal values and the
// pod's name; any other source is refused, as the check could not know its value).
func podEnv(c *corev1.Container, podName string) ([]string, error) {
	env := []string{"PATH=" + os.Getenv("PATH")}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env = append(env, e.Name+"="+podName)
		default:
			return nil, fmt.Errorf("env %s: only literal values and metadata.name are checked", e.Name)
		}
	}
	if len(c.EnvFrom) > 0 {
		return nil, fmt.Errorf("envFrom is not allowed: configs live in the mounted file")
	}
	return env, nil
}

// run runs `<binDir>/<binary> --config <file> <args>` on the config text in a clean
// environment plus env, and returns what it prints.
func run(binDir, binary, text string, env []string, args ...string) (string, error) {
	dir, err := os.MkdirTemp("", "k8s-check-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(binDir, binary), append([]string{"--config", file}, args...)...)
	cmd.Env = env
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s refused the rendered config: %v: %s", binary, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out.String(), nil
}

// printConfig runs `<binDir>/<binary> --config <file> --print-config` in a clean
// environment plus env, and parses what it prints.
func printConfig(binDir, binary, text string, env []string) (effective, error) {
	out, err := run(binDir, binary, text, env, "--print-config")
	if err != nil {
		return nil, err
	}
	var eff effective
	if _, err := toml.Decode(out, &eff); err != nil {
		return nil, fmt.Errorf("%s --print-config printed no TOML: %w", binary, err)
	}
	return eff, nil
}

// bounds is the gateway's worst case as `entropy-gateway --print-bounds` prints it (JSON).
type bounds struct {
	Memory []struct {
		Name  string `json:"name"`
		Bytes int64  `json:"bytes"`
	} `json:"memory"`
	MemoryBytes int64 `json:"memory_bytes"`
	Workers     int64 `json:"workers"`
}

// on is the worst case with `cpus` runtime workers instead of those of the machine that
// printed it (the one term that grows with them).
func (b bounds) on(cpus int64) int64 {
	worst := b.MemoryBytes
	for _, t := range b.Memory {
		if t.Name == "responses being encoded" && b.Workers > 0 {
			worst += t.Bytes/b.Workers*max(cpus, 1) - t.Bytes
		}
	}
	return worst
}

// printBounds runs `entropy-gateway --config <file> --print-bounds --log-format json`.
func printBounds(binDir, text string, env []string) (bounds, error) {
	var b bounds
	out, err := run(binDir, "entropy-gateway", text, env, "--print-bounds", "--log-format", "json")
	if err != nil {
		return b, err
	}
	if err := json.Unmarshal([]byte(out), &b); err != nil || b.Workers <= 0 {
		return b, fmt.Errorf("entropy-gateway --print-bounds printed no bounds: %v", err)
	}
	return b, nil
}

// intKey is an integer key of an effective config; missing is an error (print-config prints
// every key, defaults included).
func (e effective) intKey(k string) (int64, error) {
	v, ok := e[k]
	if !ok {
		return 0, fmt.Errorf("effective config has no %s", k)
	}
	n, ok := v.(int64)
	if !ok {
		return 0, fmt.Errorf("effective config: %s = %v is not an integer", k, v)
	}
	return n, nil
}

// tables is an array of tables ([[gateway]], [[source]]) of an effective config.
func (e effective) tables(k string) []map[string]any {
	switch t := e[k].(type) {
	case []map[string]any:
		return t
	case []any:
		var out []map[string]any
		for _, x := range t {
			if m, ok := x.(map[string]any); ok {
				out = append(out, m)
			}
		}
		return out
	}
	return nil
}
