package entropy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// Every example runs against the live gateway and prints what it promises.
func TestExamples(t *testing.T) {
	uuid := `[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}`
	out := filepath.Join(t.TempDir(), "out.bin")
	expected := map[string]string{
		"dice":       `^\[([1-6] ){9}[1-6]\]\n$`,
		"password":   `^\S{20}\n$`,
		"uuids":      `^(` + uuid + `\n){5}$`,
		"seedprng":   `^seed=[0-9a-f]{64} normal=\S+ perm=\[.*\]\n$`,
		"streamfile": `^wrote 8388608 bytes to .*\n$`,
		"provenance": `^32 bytes [0-9a-f]{64} kinds=\[os\] collectors=\[dev-collector\] chunks=[1-9]\d* first=\d+ last=\d+\n` +
			`quality passed=true shannon=\S+ min-entropy=\S+ fips-blocks=26 failures=\[\]\n$`,
	}
	dirs, err := os.ReadDir("../examples")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != len(expected) {
		t.Fatalf("%d examples, %d covered here", len(dirs), len(expected))
	}
	for name, pattern := range expected {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command("go", "run", "../examples/"+name, out)
			cmd.Env = append(os.Environ(), "ENTROPY_ENDPOINT="+target, "ENTROPY_API_KEY="+apiKey, "ENTROPY_CA_FILE=")
			stdout, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v: %s", err, stdout)
			}
			if !regexp.MustCompile(pattern).Match(stdout) {
				t.Fatalf("output %q does not match %s", stdout, pattern)
			}
		})
	}
	if fi, err := os.Stat(out); err != nil || fi.Size() != 8<<20 {
		t.Fatalf("streamfile output: %v, %v", fi, err)
	}
}
