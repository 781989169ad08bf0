// render.go: `helm lint --strict` and `helm template`, done with Helm's own packages (the
// same code the helm command runs), so one Go build lints, renders and checks.

package main

import (
	"fmt"
	"path"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
)

// renderOptions name what `helm template <release> <chart> -n <namespace> -f <values>
// --kube-version <kubeVersion>` would be given.
type renderOptions struct {
	chartDir    string
	valuesFile  string
	release     string
	namespace   string
	kubeVersion string
}

// userValues reads the -f file, if any (helm's --values).
func userValues(o renderOptions) (map[string]interface{}, error) {
	if o.valuesFile == "" {
		return map[string]interface{}{}, nil
	}
	v, err := chartutil.ReadValuesFile(o.valuesFile)
	if err != nil {
		return nil, fmt.Errorf("values %s: %w", o.valuesFile, err)
	}
	return v.AsMap(), nil
}

// lintStrict runs helm's linter; as `helm lint --strict`, a warning fails as an error does.
func lintStrict(o renderOptions) error {
	vals, err := userValues(o)
	if err != nil {
		return err
	}
	kv, err := chartutil.ParseKubeVersion(o.kubeVersion)
	if err != nil {
		return fmt.Errorf("kube version %q: %w", o.kubeVersion, err)
	}
	linter := lint.AllWithKubeVersion(o.chartDir, vals, o.namespace, kv)
	var failed []string
	for _, m := range linter.Messages {
		if m.Severity >= support.WarningSev {
			failed = append(failed, m.Error())
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("helm lint --strict: %s", strings.Join(failed, "; "))
	}
	return nil
}

// render returns the manifest `helm template` prints: every non-empty template of the chart
// in install order, each behind `---` and its `# Source:` line (NOTES.txt left out).
func render(o renderOptions) (string, error) {
	chrt, err := loader.Load(o.chartDir)
	if err != nil {
		return "", fmt.Errorf("load chart %s: %w", o.chartDir, err)
	}
	vals, err := userValues(o)
	if err != nil {
		return "", err
	}
	if err := chartutil.ProcessDependenciesWithMerge(chrt, vals); err != nil {
		return "", err
	}
	kv, err := chartutil.ParseKubeVersion(o.kubeVersion)
	if err != nil {
		return "", fmt.Errorf("kube version %q: %w", o.kubeVersion, err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	if want := chrt.Metadata.KubeVersion; want != "" && !chartutil.IsCompatibleRange(want, kv.String()) {
		return "", fmt.Errorf("chart requires kubeVersion %s, not %s", want, kv.String())
	}
	opts := chartutil.ReleaseOptions{Name: o.release, Namespace: o.namespace, IsInstall: true, Revision: 1}
	toRender, err := chartutil.ToRenderValues(chrt, vals, opts, caps)
	if err != nil {
		return "", err
	}
	// Strict: a reference to a value that does not exist fails instead of printing nothing.
	files, err := engine.Engine{Strict: true}.Render(chrt, toRender)
	if err != nil {
		return "", err
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return "", err
	}
	if len(hooks) > 0 {
		return "", fmt.Errorf("the chart has %d hooks; none expected", len(hooks))
	}
	var b strings.Builder
	for _, m := range manifests {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", path.Clean(m.Name), m.Content)
	}
	return b.String(), nil
}
