package providertest_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/openprogram/openprogram/runtime/provider/providertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestEvents(t *testing.T) {
	got := providertest.Events("data: a\n\n\n\nevent: x\r\ndata: b\r\n\r\ndata: [DONE]\n\n")
	want := []string{"data: a\n\n", "event: x\ndata: b\n\n", "data: [DONE]\n\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Events (-want +got):\n%s", diff)
	}
}

func TestServer(t *testing.T) {
	srv := providertest.New(t,
		providertest.Reply{Body: providertest.OpenAIText("m", "hi")},
		providertest.Reply{Status: 429, Body: `{"error":{"message":"slow"}}`, Header: http.Header{"Retry-After": {"3"}}},
	)
	get := func() (*http.Response, string) {
		t.Helper()
		resp, err := srv.Client().Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"x":1}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	resp, body := get()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Errorf("first reply = %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	resp, body = get()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" || body != `{"error":{"message":"slow"}}` {
		t.Errorf("second reply = %d %q", resp.StatusCode, body)
	}
	resp, _ = get()
	if resp.StatusCode != 500 {
		t.Errorf("reply after the canned ones = %d, want 500", resp.StatusCode)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || reqs[0].Path != "/v1/chat/completions" || string(reqs[0].Body) != `{"x":1}` {
		t.Errorf("recorded requests = %+v", reqs)
	}
}
