package command

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// TestOperatorSnapshot: save writes the archive the server sends (checked
// against its Digest; a mismatch leaves no file), restore sends the file.
func TestOperatorSnapshot(t *testing.T) {
	archive := []byte("archive bytes")
	digest := sha256.Sum256(archive)
	badDigest := false
	var restored []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			d := digest[:]
			if badDigest {
				d = make([]byte, len(d))
			}
			w.Header().Set("Digest", "sha-256="+base64.StdEncoding.EncodeToString(d))
			_, _ = w.Write(archive)
		case http.MethodPut:
			restored, _ = io.ReadAll(r.Body)
			_, _ = w.Write([]byte("{}"))
		}
	}))
	defer srv.Close()
	t.Setenv("NOMAD_ADDR", srv.URL)
	dir := t.TempDir()
	path := filepath.Join(dir, "backup.snap")

	var out, errOut bytes.Buffer
	if code := run([]string{"operator", "snapshot", "save", path}, &out, &errOut); code != 0 {
		t.Fatalf("save exit %d: %s", code, errOut.String())
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, archive) {
		t.Fatalf("saved %q, %v", got, err)
	}
	if code := run([]string{"operator", "snapshot", "restore", path}, &out, &errOut); code != 0 {
		t.Fatalf("restore exit %d: %s", code, errOut.String())
	}
	if !bytes.Equal(restored, archive) {
		t.Fatalf("restore sent %q", restored)
	}

	badDigest = true
	bad := filepath.Join(dir, "bad.snap")
	if code := run([]string{"operator", "snapshot", "save", bad}, &out, &errOut); code == 0 {
		t.Fatal("a checksum mismatch must fail")
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Fatalf("a failed save leaves no file: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}
