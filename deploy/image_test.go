package deploy_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/randid"
)

// podman runs podman with the test's containers.conf: runc, no default
// ulimits (which this machine's containers may not raise) and events in a
// file.
type podman struct {
	t    *testing.T
	conf string
}

func newPodman(t *testing.T) podman {
	t.Helper()
	if _, err := exec.LookPath("podman"); err != nil {
		t.Fatal("podman is missing (Debian: apt-get install -y podman runc; make deps installs them)")
	}
	conf := filepath.Join(t.TempDir(), "containers.conf")
	if err := os.WriteFile(conf, []byte("[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = \"runc\"\nevents_logger = \"file\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return podman{t: t, conf: conf}
}

func (p podman) env() []string { return []string{"CONTAINERS_CONF=" + p.conf} }

func (p podman) run(args ...string) string {
	p.t.Helper()
	return strings.TrimSpace(run(p.t, root, p.env(), "podman", args...))
}

// cleanup runs podman when the test ends, whatever it says.
func (p podman) cleanup(args ...string) {
	p.t.Cleanup(func() {
		cmd := exec.Command("podman", args...)
		cmd.Env = append(os.Environ(), p.env()...)
		cmd.Run()
	})
}

// TestImage: make image builds the image with no registry; run on a
// volume, it is ready, its connectors registered from its read-only
// plugin folder run, a key made with podman exec authenticates over HTTPS
// through a published port, and all of it survives a new container on the
// same volume.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the image")
	}
	p := newPodman(t)
	name := "localhost/aivis-test-" + strings.ToLower(randid.String(8))
	start := time.Now()
	run(t, root, p.env(), "make", "-s", "image", "IMAGE="+name, "ROOTFS="+filepath.Join(t.TempDir(), "image"))
	t.Logf("make image: %s", time.Since(start).Round(time.Second))
	var img struct {
		ID     string `json:"Id"`
		Size   int64
		Config struct {
			User       string
			Entrypoint []string
			Env        []string
			Volumes    map[string]any
		}
	}
	var imgs []json.RawMessage
	if err := json.Unmarshal([]byte(p.run("image", "inspect", name+":latest")), &imgs); err != nil || len(imgs) != 1 {
		t.Fatalf("podman image inspect: %v", err)
	}
	json.Unmarshal(imgs[0], &img)
	p.cleanup("rmi", "-f", img.ID) // both its tags
	t.Logf("image size: %.1f MB", float64(img.Size)/1e6)
	if img.Config.User != "65532:65532" || !slices.Equal(img.Config.Entrypoint, []string{"/usr/bin/aivis", "serve"}) ||
		img.Config.Volumes["/data"] == nil || !slices.Contains(img.Config.Env, "AIVIS_TRUSTED_PLUGINS_DIR=/usr/lib/aivis/connectors") {
		t.Errorf("the image's configuration: %s", imgs[0])
	}

	volume := strings.TrimPrefix(name, "localhost/")
	p.run("volume", "create", volume)
	p.cleanup("volume", "rm", "-f", volume)
	c := container{p: p, name: volume}
	c.start(name)
	var plugins []struct{ Name, State, Path string }
	if err := json.Unmarshal([]byte(p.run("exec", c.name, "aivis", "plugin", "list", "--json")), &plugins); err != nil {
		t.Fatal(err)
	}
	if len(plugins) != len(connectors(t)) {
		t.Errorf("plugins registered: %+v", plugins)
	}
	for _, pl := range plugins {
		if pl.State != "ok" || pl.Path != "/usr/lib/aivis/connectors/"+pl.Name {
			t.Errorf("plugin %+v", pl)
		}
	}
	var account struct{ ID string }
	if err := json.Unmarshal([]byte(p.run("exec", c.name, "aivis", "account", "create", "--name", "Acme", "--tier", "starter", "--json")), &account); err != nil {
		t.Fatal(err)
	}
	var key struct{ Key string }
	if err := json.Unmarshal([]byte(p.run("exec", c.name, "aivis", "key", "create", "--account", account.ID, "--name", "k", "--json")), &key); err != nil {
		t.Fatal(err)
	}
	running := c.connectors(t, key.Key)
	if len(running) != len(connectors(t)) {
		t.Errorf("connectors running: %v", running)
	}
	if code, _ := c.get(t, "/v1/connectors", key.Key+"x"); code != http.StatusUnauthorized {
		t.Errorf("a wrong key: %d", code)
	}

	// A new container on the same volume: the same key, certificate and
	// connectors.
	p.run("rm", "-f", "-t", "20", c.name)
	c.start(name)
	if again := c.connectors(t, key.Key); !slices.Equal(again, running) {
		t.Errorf("connectors running after a new container: %v, before %v", again, running)
	}
}

// container is one run of the image on the volume of its name.
type container struct {
	p          podman
	name       string
	api, admin string // host:port published on loopback
	client     *http.Client
}

// start runs the image and waits until /readyz answers 200 on the
// published admin port.
func (c *container) start(image string) {
	t := c.p.t
	t.Helper()
	begin := time.Now()
	c.p.run("run", "-d", "--name", c.name, "-p", "127.0.0.1::8443", "-p", "127.0.0.1::9464", "-v", c.name+":/data", image+":latest")
	c.p.cleanup("rm", "-f", "-t", "0", c.name)
	c.api, c.admin = c.p.run("port", c.name, "8443/tcp"), c.p.run("port", c.name, "9464/tcp")
	plain := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := plain.Get("http://" + c.admin + "/readyz")
		if err == nil {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode == 200 && strings.Contains(string(b), `"ready"`) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the container is not ready in 60 s: %v\n%s", err, c.p.run("logs", c.name))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("from podman run to ready: %s", time.Since(begin).Round(10*time.Millisecond))
	cert := filepath.Join(t.TempDir(), "cert.pem")
	c.p.run("cp", c.name+":/data/tls/cert.pem", cert)
	pem, err := os.ReadFile(cert)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("the container's certificate is not PEM")
	}
	c.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// get sends GET path over HTTPS with an API key.
func (c *container) get(t *testing.T, path, key string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", "https://"+c.api+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := c.client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// connectors lists the connectors the API says run, authenticated with a
// key: they start in the background, and are waited for.
func (c *container) connectors(t *testing.T, key string) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, b := c.get(t, "/v1/connectors", key)
		var page struct {
			Items []struct {
				Name   string
				Health struct{ State string }
			}
		}
		if err := json.Unmarshal(b, &page); code != 200 || err != nil {
			t.Fatalf("GET /v1/connectors: %d %s", code, b)
		}
		var running []string
		for _, i := range page.Items {
			if i.Health.State == "running" {
				running = append(running, i.Name)
			}
		}
		if len(running) == len(page.Items) && len(running) > 0 || time.Now().After(deadline) {
			return running
		}
		time.Sleep(100 * time.Millisecond)
	}
}
