package sessions_test

import (
	"strings"
	"testing"

	"github.com/openprogram/openprogram/sessions"
)

func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://op:hunter2@db.example/op", "postgres://op:xxxxx@db.example/op"},
		{"postgres://op@db.example/op?password=hunter2&sslmode=disable", "postgres://op@db.example/op?password=xxxxx&sslmode=disable"},
		{"postgres://db/op?sslpassword=hunter2&PassWord=hunter2&pool_max_conns=2", "postgres://db/op?sslpassword=xxxxx&PassWord=xxxxx&pool_max_conns=2"},
		{"postgres://db/op?pass%77ord=hunter2", "postgres://db/op?password=xxxxx"},
		{"postgres://op:hunter2@db:bad-port/op", "postgres://xxxxx@db:bad-port/op"},
		{"postgres://op:hun%zzter2@db/op?password=hunter2", "postgres://xxxxx@db/op?xxxxx"},
		{"postgres:op:hunter2@db/op", "postgres:xxxxx@db/op"},
		{"//op:hunter2@db/op", "//op:xxxxx@db/op"},
		{"host=db user=op password=hunter2 dbname=op", "host=db user=op password=xxxxx dbname=op"},
		{"host=db password='hun ter2' dbname=op", "host=db password=xxxxx dbname=op"},
		{"sqlite:/home/me/.openprogram/openprogram.db", "sqlite:/home/me/.openprogram/openprogram.db"},
		{"postgres://op@db/op?sslmode=require", "postgres://op@db/op?sslmode=require"},
		{"http://127.0.0.1:11434/v1", "http://127.0.0.1:11434/v1"},
		{"https://gw.example/v1?api-key=hunter2", "https://gw.example/v1?api-key=xxxxx"},
		{"postgres://op@db/op?x=a@b", "postgres://op@db/op?x=a@b"},
		{"postgres://op:p@hunter2@db:5432/op", "postgres://op:xxxxx@db:5432/op"},
		{"sqlite:/tmp/x@y.db", "sqlite:/tmp/x@y.db"},
	} {
		got := sessions.RedactURL(tc.in)
		if got != tc.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.Contains(got, "hunter2") || strings.Contains(got, "hun ter2") {
			t.Errorf("RedactURL(%q) = %q keeps the secret", tc.in, got)
		}
	}
}
